"""Journal speed targets: a 10,000-entry session loads in ≤ 300 ms; append ≤ 0.2 ms/entry.

Figures come from bench/bench_session.py (run with ``-s`` to see them printed)."""

from __future__ import annotations

import importlib.util
import os

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _bench():
    spec = importlib.util.spec_from_file_location("bench_session", os.path.join(REPO, "bench", "bench_session.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_ten_thousand_entries_load_and_append_fast():
    bench = _bench()
    r = bench.run(10_000)
    print(f"\nsession bench: append {r['append_ms']:.4f} ms/entry, load {r['load_ms']:.1f} ms, "
          f"load+projection {r['load_and_project_ms']:.1f} ms, sync {r['sync_ms']:.2f} ms")
    assert r["load_ms"] <= bench.LOAD_TARGET_S * 1000
    assert r["append_ms"] <= bench.APPEND_TARGET_S * 1000
    assert r["projected_items"] == 10_000
