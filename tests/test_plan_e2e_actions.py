"""Unattended sessions end to end: deferred actions, decide_action, reuse, conversion, restart."""

import json
import re

import pytest


CONFIG = {"edit_tools": ["write", "str_replace"]}


@pytest.fixture
def eng(engine):
    return engine(CONFIG)


def _unattended(eng):
    m = eng.send({"op": "set_attended", "attended": False})
    assert eng.wait_for("attended", start=m)["attended"] is False


def _input_text(req) -> str:
    return json.dumps(req["body"].get("input"), ensure_ascii=False)


def _bash(command, call_id):
    return {"name": "bash", "call_id": call_id, "arguments": {"command": command}}


def test_unattended_bash_is_deferred_then_allowed_and_reported(eng, server):
    _unattended(eng)
    cmd = "echo ran > ran.txt && echo deferred-output"
    server.script({"tool_calls": [_bash(cmd, "c1")]}, {"text": "Carrying on."})
    m = eng.send({"op": "user_message", "content": "do it"})
    eng.wait_status("ready", start=m)
    act = eng.wait_for("action_deferred", start=m)
    assert re.fullmatch(r"act-\d{13}-[0-9a-f]{8}", act["id"])
    assert act["id"].endswith(act["digest"][:8]) and len(act["digest"]) == 24
    assert (act["name"], act["call_id"], act["summary"]) == ("bash", "c1", cmd)
    assert json.loads(act["arguments"]) == {"command": cmd}
    assert act["cwd"] == str(eng.cwd.resolve()) and act["subagent_id"] is None
    assert not eng.since(m, "approval_request")
    out = eng.wait_for("tool_output", start=m)
    assert out["is_error"] is False
    body = json.loads(out["output"])
    assert body["status"] == "submitted for confirmation" and body["action_id"] == act["id"]
    assert len(server.requests) == 2          # the turn went on without waiting
    assert not (eng.cwd / "ran.txt").exists()

    server.script({"text": "Thanks, noted."})
    m = eng.send({"op": "decide_action", "action": act["id"], "decision": "allow"})
    decided = eng.wait_for("action_decided", start=m)
    assert decided["id"] == act["id"] and decided["decision"] == "allow"
    assert decided["is_error"] is False and "deferred-output" in decided["output"]
    assert (eng.cwd / "ran.txt").read_text().strip() == "ran"
    echo = eng.wait_for("user_message", start=m)
    assert echo["content"].startswith(f"[deferred action {act['id']} approved and executed]\nbash ")
    eng.wait_status("ready", start=m)
    assert len(server.requests) == 3
    text = _input_text(server.requests[2])
    assert f"[deferred action {act['id']} approved and executed]" in text and "deferred-output" in text

    m = eng.send({"op": "decide_action", "action": act["id"], "decision": "deny"})
    assert eng.wait_for("error", start=m)["message"] == \
        f"deferred action {act['id']} was already decided (allow)"


def test_same_call_twice_yields_one_action_and_deny_reports(eng, server):
    _unattended(eng)
    cmd = "touch never.txt"
    server.script({"tool_calls": [_bash(cmd, "c1"), _bash(cmd, "c2")]}, {"text": "ok"})
    m = eng.send({"op": "user_message", "content": "twice"})
    eng.wait_status("ready", start=m)
    acts = eng.since(m, "action_deferred")
    assert len(acts) == 1
    outs = eng.since(m, "tool_output")
    assert [json.loads(o["output"])["action_id"] for o in outs] == [acts[0]["id"]] * 2

    server.script({"text": "understood"})
    m = eng.send({"op": "decide_action", "action": acts[0]["id"], "decision": "deny"})
    decided = eng.wait_for("action_decided", start=m)
    assert {k: decided[k] for k in ("id", "decision", "output", "is_error")} == \
        {"id": acts[0]["id"], "decision": "deny", "output": None, "is_error": False}
    eng.wait_status("ready", start=m)
    assert f"[deferred action {acts[0]['id']} declined]" in _input_text(server.requests[-1])
    assert not (eng.cwd / "never.txt").exists()

    # The decision is reused for the identical call: no new action, the model is told no.
    server.script({"tool_calls": [_bash(cmd, "c3")]}, {"text": "fine"})
    m = eng.send({"op": "user_message", "content": "again"})
    eng.wait_status("ready", start=m)
    assert not eng.since(m, "action_deferred")
    out = eng.wait_for("tool_output", start=m)
    assert out["is_error"] is True and "already declined" in out["output"]


def test_switch_to_unattended_converts_waiting_approval(eng, server):
    server.script({"tool_calls": [_bash("echo waiting", "c1")]}, {"text": "went on"})
    m = eng.send({"op": "user_message", "content": "run"})
    eng.wait_for("approval_request", start=m)
    m2 = eng.send({"op": "set_attended", "attended": False})
    act = eng.wait_for("action_deferred", start=m2)
    assert act["call_id"] == "c1"
    eng.wait_for("attended", start=m2)
    types = eng.types_since(m2)
    assert types.index("action_deferred") < types.index("attended")
    eng.wait_status("ready", start=m)
    out = eng.wait_for("tool_output", start=m)
    assert json.loads(out["output"])["status"] == "submitted for confirmation"
    m3 = eng.send({"op": "approve", "call_id": "c1", "decision": "allow"})
    assert eng.wait_for("error", start=m3)["message"] == "no pending approval for that call"
    m4 = eng.send({"op": "set_attended", "attended": True})
    assert eng.wait_for("attended", start=m4)["attended"] is True


def test_op_validation_errors(eng):
    cases = [
        ({"op": "set_attended"}, "set_attended requires attended: true or false"),
        ({"op": "set_attended", "attended": "false"}, "set_attended requires attended: true or false"),
        ({"op": "decide_action", "action": "act-1-deadbeef"}, "decide_action requires action and decision: allow or deny"),
        ({"op": "decide_action", "decision": "allow"}, "decide_action requires action and decision: allow or deny"),
        ({"op": "decide_action", "action": "act-1-deadbeef", "decision": "allow"}, "no deferred action act-1-deadbeef"),
    ]
    for op, text in cases:
        m = eng.send(op)
        assert eng.wait_for("error", start=m)["message"] == text


def test_restarted_engine_decides_action_from_before(engine, tmp_path, server):
    first = engine(CONFIG, wait=False)
    try:
        first.wait_startup()
        _unattended(first)
        server.script({"tool_calls": [_bash("echo after-restart > restarted.txt; echo done", "c1")]},
                      {"text": "queued it"})
        m = first.send({"op": "user_message", "content": "do it later"})
        first.wait_status("ready", start=m)
        act = first.wait_for("action_deferred", start=m)
    finally:
        first.close()
    assert (first.profile / "deferred_actions.json").exists()

    # Another workspace on the same profile neither lists nor decides it.
    other = engine(CONFIG, cwd=tmp_path / "elsewhere", wait=False)
    try:
        other.wait_startup()
        m = other.send({"op": "decide_action", "action": act["id"], "decision": "allow"})
        assert other.wait_for("error", start=m)["message"] == \
            f"deferred action {act['id']} belongs to session {act['session_id']}"
        assert not other.since(0, "action_deferred")
    finally:
        other.close()

    second = engine(CONFIG, wait=False)
    try:
        second.wait_startup()
        listed = second.wait_for("action_deferred", timeout=5)   # replayed in the startup batch
        assert listed["id"] == act["id"]
        server.script({"text": "great"})
        m = second.send({"op": "decide_action", "action": act["id"], "decision": "allow"})
        decided = second.wait_for("action_decided", start=m)
        assert decided["decision"] == "allow" and "done" in decided["output"]
        assert (second.cwd / "restarted.txt").read_text().strip() == "after-restart"
        second.wait_status("ready", start=m)
        assert f"[deferred action {act['id']} approved and executed]" in _input_text(server.requests[-1])
    finally:
        second.close()
