"""Interrupting a compaction and failing durability points, through the real engine.

- ``interrupt`` during ``/compact`` cancels the stalled summarizer request, reports
  ``compaction_failed {error: "interrupted"}`` + ``status interrupted`` at once and leaves the
  session uncompacted and usable; during automatic compaction it ends the turn like any
  interrupt.
- A failing fsync at a turn boundary and a failing sidecar write each surface as one ``error``
  while the engine keeps serving, and the next boundary saves everything.
"""

from __future__ import annotations

import json
import time

from fakeserver import request_input_texts
from test_session_e2e_compact import config, turn

BIG = "word " * 26_000          # > 20k tokens: foldable once a newer message exists
SUMMARY = "SUMMARY: a long list of words."
COMPACTED = "[Earlier conversation compacted to a summary for context efficiency]\n\n"


def test_interrupt_stops_manual_compaction(engine, server):
    a = engine(config())
    server.script({"text": "noted"}, {"text": "ok"}, {"text": SUMMARY, "stall": 30})
    turn(a, BIG)
    turn(a, "short")
    m = a.send({"op": "command", "input": "/compact"})
    a.wait_for("compaction_progress", start=m, timeout=20)   # deltas arrived, the end is stalled
    t0 = time.monotonic()
    i = a.send({"op": "interrupt"})
    a.wait_status("interrupted", start=i, timeout=5)
    assert time.monotonic() - t0 < 2
    assert a.since(i, "compaction_failed") == [{"type": "compaction_failed", "error": "interrupted",
                                                "session": a.wait_for("startup")["session_id"]}]
    # usable at once: a new turn runs on the full, uncompacted context
    server.script({"text": "after"})
    n = turn(a, "next")
    types = a.types_since(i)
    assert "compaction_end" not in types
    assert "compaction_progress" not in types[types.index("compaction_failed"):]   # nothing leaks after it
    assert a.since(n, "error") == []
    texts = request_input_texts(server.requests[-1])
    assert texts[0] == BIG and texts[-1] == "next" and not any(t.startswith(COMPACTED) for t in texts)
    # a second interrupt while idle is still a no-op
    k = a.send({"op": "interrupt"})
    a.send({"op": "command", "input": "/transcript"})
    a.wait_for("transcript", start=k)
    assert "status" not in a.types_since(k)


def test_interrupt_during_automatic_compaction_ends_the_turn(engine, server):
    a = engine(config(30_000))
    server.script({"text": "noted"}, {"text": SUMMARY, "stall": 30})
    turn(a, BIG)
    m = a.send({"op": "user_message", "content": "what did I paste?"})
    a.wait_for("compaction_start", start=m, timeout=20)
    server.wait_requests(2)
    i = a.send({"op": "interrupt"})
    a.wait_status("interrupted", start=i, timeout=5)
    assert "compaction_end" not in a.types_since(m)
    assert len(server.requests) == 2                         # the turn never sent its request
    server.script({"text": SUMMARY}, {"text": "answer"})
    n = turn(a, "again")
    assert "compaction_end" in a.types_since(n) and a.since(n, "error") == []
    assert request_input_texts(server.requests[-1])[0] == COMPACTED + SUMMARY


SITECUSTOMIZE = """
import os
_flag = os.environ.get("JUCODE_TEST_FSYNC_FAILS")
if _flag:
    import errno
    _real = os.fsync
    def _fsync(fd):
        if os.path.exists(_flag):
            raise OSError(errno.ENOSPC, "No space left on device")
        return _real(fd)
    os.fsync = _fsync
"""


def test_failing_sync_at_turn_boundary_is_one_error(engine, tmp_path, server):
    """fsync fails (as on a full disk) while a flag file exists: appends succeed, the turn
    boundary's sync does not."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    flag = tmp_path / "fsync-fails"
    a = engine(config(), env={"PYTHONPATH": str(site), "JUCODE_TEST_FSYNC_FAILS": str(flag)})
    sid = a.wait_for("startup")["session_id"]
    server.script({"text": "one"}, {"text": "two"}, {"text": "three"})
    turn(a, "first")
    flag.write_text("")
    m = turn(a, "second")
    errors = [e["message"] for e in a.since(m, "error")]
    assert errors == ["failed to save session: [Errno 28] No space left on device"]
    assert [t for t in a.types_since(m) if t != "model_status"][-1] == "status"
    flag.unlink()
    m = turn(a, "third")
    assert a.since(m, "error") == []
    assert request_input_texts(server.requests[-1]) == ["first", "one", "second", "two", "third"]
    side = json.loads(next(a.profile.glob(f"sessions/*/{sid}.json")).read_text())
    assert side["entries_count"] == 6                      # the retried sync saved everything


def test_failing_sidecar_write_is_one_error(engine, server):
    """A directory where the sidecar's temp file goes makes that write fail (EISDIR) even as root."""
    a = engine(config())
    sid = a.wait_for("startup")["session_id"]
    server.script({"text": "one"}, {"text": "two"}, {"text": "three"})
    turn(a, "first")
    sidecar = next(a.profile.glob(f"sessions/*/{sid}.json"))
    blocker = sidecar.with_name(sidecar.name + ".tmp")
    blocker.mkdir()
    m = turn(a, "second")
    errors = [e["message"] for e in a.since(m, "error")]
    assert len(errors) == 1 and errors[0].startswith("failed to save session: ") and "directory" in errors[0]
    assert json.loads(sidecar.read_text())["entries_count"] == 2          # the old one is intact
    blocker.rmdir()
    m = turn(a, "third")
    assert a.since(m, "error") == []
    assert json.loads(sidecar.read_text())["entries_count"] == 6
    assert request_input_texts(server.requests[-1]) == ["first", "one", "second", "two", "third"]
