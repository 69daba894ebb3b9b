"""Session journal figures: load time of a 10,000-entry session and per-entry append cost.

Run: .venv/bin/python bench/bench_session.py [N]. Prints one line per figure; exits 1 if a
target is missed (load ≤ 300 ms, append ≤ 0.2 ms/entry).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from jucode.session import SessionStore  # noqa: E402

LOAD_TARGET_S = 0.300
APPEND_TARGET_S = 0.0002


def realistic_kind(i: int) -> dict:
    """A mix like a real tool loop: user, call, output, assistant text."""
    r = i % 4
    if r == 0:
        return {"type": "user", "content": f"please look at file_{i}.py and fix the failing test"}
    if r == 1:
        return {"type": "response_item", "item": {"type": "function_call", "call_id": f"call_{i}",
                                                  "name": "bash", "arguments": '{"command":"pytest -q"}'}}
    if r == 2:
        return {"type": "tool_output", "call_id": f"call_{i - 1}", "name": "bash",
                "output": "....F.. 1 failed, 6 passed\n" * 4}
    return {"type": "response_item", "item": {"type": "message", "role": "assistant",
                                              "content": [{"type": "output_text", "text": "Fixed it. " * 10}]}}


def run(n: int = 10_000) -> dict:
    with tempfile.TemporaryDirectory() as profile:
        cwd = "/bench/project"
        store = SessionStore.create(profile, cwd)
        store.append(realistic_kind(0))          # first append writes snapshot + sidecar
        t0 = time.perf_counter()
        for i in range(1, n):
            store.append(realistic_kind(i))
        append_s = (time.perf_counter() - t0) / (n - 1)
        t0 = time.perf_counter()
        store.sync()
        sync_s = time.perf_counter() - t0
        sid = store.id
        store.close()
        size = os.path.getsize(store.journal_path)
        best = None
        for _ in range(3):
            t0 = time.perf_counter()
            again = SessionStore.open(profile, cwd, sid)
            dt = time.perf_counter() - t0
            assert len(again.entries) == n
            again.close()
            best = dt if best is None else min(best, dt)
        t0 = time.perf_counter()
        again = SessionStore.open(profile, cwd, sid)
        items = again.request_items()
        proj_s = time.perf_counter() - t0
        again.close()
        return {"entries": n, "journal_bytes": size, "append_ms": append_s * 1000,
                "sync_ms": sync_s * 1000, "load_ms": best * 1000,
                "load_and_project_ms": proj_s * 1000, "projected_items": len(items)}


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    r = run(n)
    print(f"entries={r['entries']} journal={r['journal_bytes'] / 1e6:.2f} MB")
    print(f"append: {r['append_ms']:.4f} ms/entry (target <= {APPEND_TARGET_S * 1000:.1f})")
    print(f"sync:   {r['sync_ms']:.2f} ms")
    print(f"load:   {r['load_ms']:.1f} ms (target <= {LOAD_TARGET_S * 1000:.0f})")
    print(f"load+projection: {r['load_and_project_ms']:.1f} ms ({r['projected_items']} items)")
    ok = r["append_ms"] <= APPEND_TARGET_S * 1000 and r["load_ms"] <= LOAD_TARGET_S * 1000
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
