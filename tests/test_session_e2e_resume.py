"""Sessions surviving restarts and faults, through real engine subprocesses: resume with full
context/model/branch, SIGKILL mid-stream, a hand-torn journal line, a second engine on a locked
session, and a journal that hits a file-size limit (disk full) while the engine keeps serving."""

from __future__ import annotations

import json

import pytest

from fakeserver import request_input_texts
from harness import run_turn as turn

CONFIG = {"retry_attempts": 0}


def resume(eng, sid: str) -> int:
    m = eng.send({"op": "command", "input": f"/resume {sid}"})
    eng.wait_for(lambda e: e.get("type") == "error" or e.get("message") == f"resumed session {sid}",
                 start=m, timeout=10)
    return m


def journal_of(eng, sid: str):
    return next(eng.profile.glob(f"sessions/*/{sid}.jsonl"))


def test_resume_across_restart_keeps_context_model_and_branch(engine, server):
    a = engine(CONFIG)
    sid = a.wait_for("startup")["session_id"]
    a.send({"op": "command", "input": "/model gpt-alt"})
    server.script({"text": "reply one"}, {"text": "reply two"}, {"text": "reply two bis"})
    turn(a, "first")
    turn(a, "second")
    m = a.send({"op": "command", "input": "/checkout e3"})
    a.wait_status("checked out e3", start=m)
    turn(a, "second edited")
    a.close()
    cfg = json.loads((a.profile / "config.json").read_text())
    cfg["model"] = "gpt-test"                      # the new engine starts on another model
    (a.profile / "config.json").write_text(json.dumps(cfg))

    b = engine(CONFIG)
    assert b.wait_for("startup")["model"] == "gpt-test"
    m = b.send({"op": "command", "input": "/resume"})
    view = b.wait_for("resume_view", start=m)
    assert {"id": sid, "label": "first", "active": False} in view["items"]
    m = resume(b, sid)
    types = b.types_since(m)
    assert types.index("transcript") < types.index("pending_messages") < types.index("model_status") \
        < types.index("status")
    assert b.wait_for("context_usage", start=m)["tokens"] > 0   # counted off the main thread on a cold start
    items = b.since(m, "transcript")[0]["items"]
    assert [i["content"] for i in items] == ["first", "reply one", "second edited", "reply two bis"]
    assert b.since(m, "pending_messages")[0]["messages"] == []
    assert b.since(m, "model_status")[-1]["model"] == "gpt-alt"
    server.script({"text": "reply three"})
    turn(b, "third")
    req = server.requests[-1]
    assert req["body"]["model"] == "gpt-alt"
    texts = request_input_texts(req)
    assert texts[-1] == "third"
    assert {"first", "second edited", "third"} <= set(texts) and "second" not in texts
    assert "reply two bis" in json.dumps(req["body"]["input"])
    # the next events carry the resumed session id
    assert b.since(m, "status")[-1]["session"] == sid


def test_sigkill_mid_stream_then_resume_has_every_written_entry(engine, server):
    a = engine(CONFIG)
    sid = a.wait_for("startup")["session_id"]
    a.send({"op": "set_approval_mode", "mode": "full-access"})
    server.script({"tool_calls": [{"name": "bash", "arguments": {"command": "echo tool-ran"}, "call_id": "k1"}]},
                  {"text": "partial answer that never finishes", "stall": 60})
    m = a.send({"op": "user_message", "content": "run something"})
    a.wait_for("tool_output", start=m)
    a.wait_for("assistant_delta", start=m)
    a.proc.kill()
    a.proc.wait(5)

    b = engine(CONFIG)
    m = resume(b, sid)
    assert b.since(m, "error") == []
    items = b.since(m, "transcript")[0]["items"]
    assert items[0] == {"role": "user", "content": "run something"}
    assert items[1]["role"] == "tool" and "tool-ran" in items[1]["output"]
    server.script({"text": "continuing"})
    turn(b, "go on")
    body = json.dumps(server.requests[-1]["body"]["input"])
    assert "run something" in body and "tool-ran" in body and '"k1"' in body


def test_torn_last_line_still_loads_with_info(engine, server):
    a = engine(CONFIG)
    sid = a.wait_for("startup")["session_id"]
    server.script({"text": "kept reply"})
    turn(a, "kept question")
    a.close()
    path = journal_of(a, sid)
    with open(path, "ab") as f:
        f.write(b'{"type":"entry","entry":{"id":99,"parent_id":2,"created_at":1,"kind":{"type":"us')

    b = engine(CONFIG)
    m = resume(b, sid)
    infos = [e["message"] for e in b.since(m, "info")]
    assert any("torn" in i for i in infos), infos
    assert [i["content"] for i in b.since(m, "transcript")[0]["items"]] == ["kept question", "kept reply"]
    server.script({"text": "after repair"})
    turn(b, "next")
    b.close()
    # the torn line was sealed: every complete line parses, the new entries are there
    lines = path.read_bytes().split(b"\n")
    parsed = [json.loads(x) for x in lines[:-1] if x and not x.startswith(b'{"type":"entry","entry":{"id":99')]
    assert any(p.get("entry", {}).get("kind", {}).get("content") == "next" for p in parsed)


@pytest.mark.slow          # the lock waits its upstream 2 s before giving up
def test_second_engine_gets_the_lock_error_and_keeps_serving(engine, server):
    a = engine(CONFIG)
    sid = a.wait_for("startup")["session_id"]
    server.script({"text": "mine"})
    turn(a, "hold the lock")
    b = engine(CONFIG)
    m = resume(b, sid)
    err = b.since(m, "error")[0]["message"]
    assert err.startswith(f"session {sid} is already open by pid {a.proc.pid}; close it first or delete ")
    assert err.endswith(f"{sid}.lock if stale")
    m = b.send({"op": "command", "input": "/tree"})
    assert b.wait_for("tree_view", start=m)["nodes"] == []
    server.script({"text": "a still works"})
    turn(a, "still mine")


SITECUSTOMIZE = """
import os
_lim = os.environ.get("JUCODE_TEST_FSIZE")
if _lim:
    import resource, signal
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(_lim), int(_lim)))
"""


def test_disk_full_on_journal_is_an_error_and_engine_keeps_serving(engine, tmp_path, server):
    """RLIMIT_FSIZE makes writes past 64 KiB fail with EFBIG, as a full disk would (we run as
    root in CI, so permission bits would not stop the writes)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    a = engine(CONFIG, env={"PYTHONPATH": str(site), "JUCODE_TEST_FSIZE": str(64 * 1024)})
    sid = a.wait_for("startup")["session_id"]
    server.script({"text": "small"}, {"text": "big one answered"}, {"text": "still serving"})
    turn(a, "small first")
    m = turn(a, "x" * 70_000)
    errors = [e["message"] for e in a.since(m, "error")]
    assert len(errors) == 1 and errors[0].startswith("failed to save session: ") and "too large" in errors[0]
    m = turn(a, "are you there?")
    assert a.since(m, "error") == []                 # reported once per failure streak
    texts = request_input_texts(server.requests[-1])
    assert texts[-1] == "are you there?" and "x" * 70_000 in texts   # memory keeps the conversation
    a.close()
    # what reached the disk before the failure still loads
    b = engine(CONFIG)
    m = resume(b, sid)
    assert b.since(m, "error") == []
    assert [i["content"] for i in b.since(m, "transcript")[0]["items"]][:2] == ["small first", "small"]
