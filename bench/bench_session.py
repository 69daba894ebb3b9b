"""Session figures: journal append cost, load of a 10,000-entry session (store alone and
``/resume`` through the real engine), and a 50-turn engine session's memory growth vs its
journal size.

Run: .venv/bin/python bench/bench_session.py [N]. Prints one line per figure; exits 1 if a
target is missed (resume ≤ 300 ms, append ≤ 0.2 ms/entry, memory growth < journal size).
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


def _rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def engine_resume(n: int = 10_000) -> dict:
    """``/resume`` of an n-entry session through the engine subprocess: op sent → status."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
    from fakeserver import FakeModelServer
    from harness import EngineProc
    server = FakeModelServer()
    with tempfile.TemporaryDirectory() as tmp:
        eng = EngineProc(tmp, server, config={"retry_attempts": 0})
        try:
            eng.wait_startup()
            store = SessionStore.create(str(eng.profile), os.path.realpath(str(eng.cwd)))
            for i in range(n):
                store.append(realistic_kind(i))
            store.close()
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                m = eng.send({"op": "command", "input": f"/resume {store.id}"})
                eng.wait_status(f"resumed session {store.id}", start=m, timeout=30)
                times.append(time.perf_counter() - t0)
            return {"resume_ms": min(times) * 1000, "resume_first_ms": times[0] * 1000}
        finally:
            eng.close()
            server.close()


def engine_memory(turns: int = 50) -> dict:
    """RSS growth of the engine over ``turns`` turns (after a 5-turn warm-up) vs journal bytes."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
    from fakeserver import FakeModelServer
    from harness import EngineProc
    server = FakeModelServer()
    server.default_reply = {"text": "Here is what I found in the code. " * 60, "chunk": 400}
    with tempfile.TemporaryDirectory() as tmp:
        eng = EngineProc(tmp, server, config={"retry_attempts": 0})
        try:
            eng.wait_startup()
            sid = eng.wait_for("startup")["session_id"]

            def one(i):
                m = eng.send({"op": "user_message", "content": f"question {i}: " + "look at this code " * 100})
                eng.wait_status("ready", start=m, timeout=30)
            for i in range(5):
                one(i)
            journal = next(eng.profile.glob(f"sessions/*/{sid}.jsonl"))
            before_rss, before_size = _rss_kb(eng.proc.pid), journal.stat().st_size
            for i in range(5, 5 + turns):
                one(i)
            after_rss, after_size = _rss_kb(eng.proc.pid), journal.stat().st_size
            return {"rss_growth_kb": after_rss - before_rss, "journal_growth_kb": (after_size - before_size) / 1024,
                    "journal_kb": after_size / 1024}
        finally:
            eng.close()
            server.close()


def session_memory(turns: int = 50, count: bool = True) -> dict:
    """Python heap growth (tracemalloc) of the session layer over ``turns`` engine-like turns:
    record user/assistant/tool entries, project the request and count it each turn, as the
    engine's SessionHost does. Isolates the session's own memory from SDK/allocator noise."""
    import tracemalloc
    from jucode.session.projection import request_items
    from jucode.tokens import Counter
    counter = Counter("gpt-5")
    counter.load()
    with tempfile.TemporaryDirectory() as profile:
        store = SessionStore.create(profile, "/bench/project")

        def one(i):
            store.append({"type": "user", "content": f"question {i}: " + "look at this code " * 100})
            store.append({"type": "response_item", "item": {"type": "function_call", "call_id": f"c{i}",
                                                            "name": "bash", "arguments": '{"command":"ls"}'}})
            store.append({"type": "tool_output", "call_id": f"c{i}", "name": "bash", "output": "file.py\n" * 50})
            store.append({"type": "response_item", "item": {"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": "Here is what I found in the code. " * 60}]}})
            if count:
                counter.count_items(request_items(store))
            store.sync()
        one(0)
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        size0 = os.path.getsize(store.journal_path)
        for i in range(1, turns + 1):
            one(i)
        grown = tracemalloc.get_traced_memory()[0] - base
        tracemalloc.stop()
        size = os.path.getsize(store.journal_path)
        store.close()
        return {"heap_growth_kb": grown / 1024, "journal_growth_kb": (size - size0) / 1024}


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    r = run(n)
    print(f"entries={r['entries']} journal={r['journal_bytes'] / 1e6:.2f} MB")
    print(f"append: {r['append_ms']:.4f} ms/entry (target <= {APPEND_TARGET_S * 1000:.1f})")
    print(f"sync:   {r['sync_ms']:.2f} ms")
    print(f"load:   {r['load_ms']:.1f} ms (target <= {LOAD_TARGET_S * 1000:.0f})")
    print(f"load+projection: {r['load_and_project_ms']:.1f} ms ({r['projected_items']} items)")
    e = engine_resume(n)
    print(f"engine /resume of {n} entries: {e['resume_ms']:.1f} ms (first {e['resume_first_ms']:.1f} ms; "
          f"target <= {LOAD_TARGET_S * 1000:.0f})")
    sm = session_memory(50, count=False)
    print(f"50 turns, session store: heap grew {sm['heap_growth_kb']:.0f} KiB vs journal growth "
          f"{sm['journal_growth_kb']:.0f} KiB (target: less)")
    sc = session_memory(50, count=True)
    print(f"50 turns, store + token counter memo: heap grew {sc['heap_growth_kb']:.0f} KiB "
          f"(the memo keeps a 16-byte digest and a count per item)")
    mem = engine_memory(50)
    print(f"50 turns, whole engine (informative): RSS grew {mem['rss_growth_kb']:.0f} KiB, journal grew "
          f"{mem['journal_growth_kb']:.0f} KiB (total {mem['journal_kb']:.0f} KiB)")
    ok = (r["append_ms"] <= APPEND_TARGET_S * 1000 and e["resume_ms"] <= LOAD_TARGET_S * 1000
          and sm["heap_growth_kb"] < sm["journal_growth_kb"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
