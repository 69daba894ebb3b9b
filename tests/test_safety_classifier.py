"""``auto`` mode's safety classifier through the real engine and the scripted model server:
only an explicit allow skips the approval; deny, garbage and errors ask; other modes never ask
the classifier (jucode/safety.py, reference §5.14)."""

from __future__ import annotations

import json

from jucode.safety import INSTRUCTIONS, parse_verdict

ALLOW = '{"outcome": "allow", "rationale": "writes a file inside the project"}'
DENY = '{"outcome": "deny", "rationale": "deletes the home directory"}'


def _bash(cmd: str, call_id: str = "b1") -> dict:
    return {"tool_calls": [{"name": "bash", "arguments": {"command": cmd}, "call_id": call_id}]}


def _auto(eng, mode="auto"):
    m = eng.send({"op": "set_approval_mode", "mode": mode})
    eng.wait_for("approval_mode", start=m)


def test_allow_runs_the_command_without_asking(engine, server):
    eng = engine({"models": [{"name": "gpt-test", "input_cost": 1.0, "output_cost": 2.0}]})
    _auto(eng)
    n0 = len(server.requests)
    server.script(dict(_bash("echo routine > made.txt"), usage={"input": 1000, "output": 100}),
                  {"text": ALLOW, "usage": {"input": 300, "output": 20}},
                  {"text": "done", "usage": {"input": 1200, "output": 10}})
    m = eng.send({"op": "user_message", "content": "make the file"})
    eng.wait_status("ready", start=m, timeout=20)
    assert not eng.since(m, "approval_request")
    out = [e for e in eng.since(m, "tool_output") if e["call_id"] == "b1"][0]
    assert not out["is_error"] and (eng.cwd / "made.txt").read_text() == "routine\n"
    turn_first, verdict, turn_second = server.requests[n0:]
    body = verdict["body"]
    assert body["instructions"] == INSTRUCTIONS and "tools" not in body
    assert body["max_output_tokens"] == 512
    shown = json.loads(body["input"][0]["content"][0]["text"])
    assert shown["tool"] == "bash" and shown["command"] == "echo routine > made.txt"
    assert shown["project_directory"].endswith("work")
    # the verdict's tokens are paid for: cost covers all three responses at $1/$2 per 1M
    cost = eng.since(m, "context_usage")[-1]["cost"]
    assert abs(cost - (2500 * 1.0 + 130 * 2.0) / 1e6) < 1e-9, cost
    # only the turn's two responses are usage events of the turn
    assert len(eng.since(m, "usage")) == 2


def test_deny_garbage_and_errors_fall_back_to_asking(engine, server):
    eng = engine()
    _auto(eng)
    for i, verdict in enumerate([{"text": DENY}, {"text": "sure, looks fine"}, {"status": 500}]):
        n0 = len(server.requests)
        server.script(_bash(f"rm -rf ~/thing{i}", f"b{i}"), verdict, {"text": "ok"})
        m = eng.send({"op": "user_message", "content": f"try {i}"})
        ask = eng.wait_for("approval_request", start=m, timeout=20)
        assert ask["call_id"] == f"b{i}"
        eng.send({"op": "approve", "call_id": f"b{i}", "decision": "deny"})
        eng.wait_status("ready", start=m, timeout=20)
        assert len(server.requests) - n0 == 3          # one classifier attempt, never retried
        out = [e for e in eng.since(m, "tool_output") if e["call_id"] == f"b{i}"][0]
        assert out["is_error"] and "denied by user" in out["output"]


def test_other_modes_never_consult_the_classifier(engine, server):
    eng = engine()
    _auto(eng, "auto-edit")
    n0 = len(server.requests)
    server.script(_bash("echo hi"), {"text": "ok"})
    m = eng.send({"op": "user_message", "content": "go"})
    eng.wait_for("approval_request", start=m, timeout=20)
    eng.send({"op": "approve", "call_id": "b1", "decision": "allow"})
    eng.wait_status("ready", start=m, timeout=20)
    assert len(server.requests) - n0 == 2
    assert all(r["body"].get("instructions") != INSTRUCTIONS for r in server.requests[n0:])


def test_parse_verdict():
    assert parse_verdict(ALLOW) == ("allow", "writes a file inside the project")
    assert parse_verdict('Sure. {"outcome":"ALLOW"} trailing') == ("allow", "")
    assert parse_verdict('{"x": {"outcome": 1}} {"outcome": "deny", "rationale": 5}') == ("deny", "")
    assert parse_verdict("no json here {") == ("unreadable", "")
    assert parse_verdict("") == ("unreadable", "")
