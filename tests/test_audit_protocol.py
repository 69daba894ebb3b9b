"""Protocol audit: the running engine checked against the seed (serve-protocol.txt) and the
front-end notes, by driving the real ``jucode serve`` subprocess.

Each test states one rule of the spec. Tests that show a known discrepancy are marked
``xfail(strict=True)`` with the reason, so they turn into failures (and get unmarked) once fixed.
"""

from __future__ import annotations

import json

import pytest

from fakeserver import FakeModelServer, request_input_texts
from harness import EngineProc

BUSY = {"streaming", "connecting", "compacting", "steering"}


@pytest.fixture(scope="module")
def shared_server():
    s = FakeModelServer()
    yield s
    s.close()


@pytest.fixture(scope="module")
def idle(tmp_path_factory, shared_server):
    """One engine for checks that never start a turn (cheap: one startup for many ops)."""
    e = EngineProc(tmp_path_factory.mktemp("audit-idle"), shared_server, config={})
    e.wait_startup()
    yield e
    e.close()


CONFIG = {"edit_tools": ["write", "str_replace"], "retry_attempts": 0}


@pytest.fixture
def eng(engine):
    return engine(CONFIG)


def roundtrip(e: EngineProc, op) -> list[dict]:
    """Send ``op`` then a sentinel op; return the events the first op produced (model_status
    excluded: the serve loop interleaves it on its own)."""
    m = e.send(op)
    e.send({"op": "agent_runs", "probe": True})
    e.wait_for("agent_runs", start=m)
    evs = e.since(m)
    out = []
    for ev in evs:
        if ev.get("type") == "agent_runs":
            break
        if ev.get("type") != "model_status":
            out.append(ev)
    return out


def strip(ev: dict) -> dict:
    return {k: v for k, v in ev.items() if k != "session"}


def errors(evs: list[dict]) -> list[str]:
    return [e["message"] for e in evs if e.get("type") == "error"]


# --------------------------------------------------------------------------------------------
# Framing and startup
# --------------------------------------------------------------------------------------------

def test_hello_then_startup_batch_in_order(idle):
    first = json.loads(idle.raw_lines[0])
    assert first == {"type": "hello", "protocol": 2, "version": first["version"]}
    assert isinstance(first["version"], str) and first["version"]
    types = [e["type"] for e in idle.events[1:6]]
    assert types == ["startup", "model_status", "command_list", "approval_mode", "mcp_servers"]
    st = idle.events[1]
    for k in ("version", "session_id", "profile_dir", "config_path", "cwd", "model"):
        assert isinstance(st[k], str) and st[k], k
    assert isinstance(st["context_window"], int) and not isinstance(st["context_window"], bool)
    ms = idle.events[2]
    for k in ("provider", "model", "reasoning_effort", "state"):
        assert isinstance(ms[k], str), k
    for k in ("context_window", "context_limit", "max_output_tokens"):
        assert isinstance(ms[k], int) and not isinstance(ms[k], bool), k
    assert isinstance(ms["reasoning_efforts"], list) and all(isinstance(x, str) for x in ms["reasoning_efforts"])
    assert ms["state"] == "ready"
    for c in idle.events[3]["commands"]:
        assert set(c) >= {"command", "marker", "args", "description"}
        assert c["command"].startswith("/") and isinstance(c["args"], str) and isinstance(c["description"], str)
        assert c["marker"] in (None, "SKILL", "MCP", "CMD", "PROJ")
    assert idle.events[4]["mode"] == "manual"
    assert isinstance(idle.events[5]["servers"], list)


def test_every_event_after_hello_carries_the_session(idle):
    roundtrip(idle, "not json")
    sid = idle.events[1]["session_id"]
    for ev in idle.events[1:]:
        assert ev.get("session") == sid, ev
    for raw in idle.raw_lines:
        assert raw.endswith(b"\n") and raw.count(b"\n") == 1
        raw.decode("utf-8")          # strict


def test_empty_and_blank_lines_are_ignored(idle):
    assert roundtrip(idle, b"\n") == []
    assert roundtrip(idle, b"   \t \n") == []
    assert roundtrip(idle, b"\r\n") == []


@pytest.mark.parametrize("line", ["not json", "{", "{\"op\":", "[1,2", "\"unterminated"])
def test_unparsable_line_is_invalid_command(idle, line):
    evs = roundtrip(idle, line)
    assert len(evs) == 1 and evs[0]["type"] == "error"
    assert evs[0]["message"].startswith("invalid command: ")


@pytest.mark.parametrize("line", ["[]", "1", "\"op\"", "null", "true"])
def test_non_object_json_is_an_error_not_a_crash(idle, line):
    evs = roundtrip(idle, line)
    assert len(evs) == 1 and evs[0]["type"] == "error"
    assert evs[0]["message"].startswith(("invalid command: ", "unknown op: "))


def test_invalid_utf8_input_line_is_invalid_command(idle):
    evs = roundtrip(idle, b'{"op":"user_message","content":"\xff\xfe"}\n')
    assert len(evs) == 1 and evs[0]["type"] == "error"
    assert evs[0]["message"].startswith("invalid command: ")


def test_unknown_and_missing_op(idle):
    assert [strip(e) for e in roundtrip(idle, {"op": "frobnicate"})] == [
        {"type": "error", "message": "unknown op: frobnicate"}]
    assert [strip(e) for e in roundtrip(idle, {"content": "x"})] == [
        {"type": "error", "message": "unknown op: "}]
    assert [strip(e) for e in roundtrip(idle, {"op": None})] == [
        {"type": "error", "message": "unknown op: "}]


def test_ops_ignore_extra_fields_and_session(idle):
    m = idle.send({"op": "agent_runs", "session": "someone-else", "x-extra": {"a": [1]}, "n": 5})
    ev = idle.wait_for("agent_runs", start=m)
    assert ev["workflows"] == [] and isinstance(ev["agents"], list)
    evs = roundtrip(idle, {"op": "set_approval_mode", "mode": "auto", "session": "zzz", "extra": True})
    assert [strip(e) for e in evs] == [{"type": "status", "message": "approval mode: auto"},
                                       {"type": "approval_mode", "mode": "auto"}]
    roundtrip(idle, {"op": "set_approval_mode", "mode": "manual"})


def test_idle_noops_emit_nothing(idle):
    for op in ({"op": "interrupt"}, {"op": "interrupt", "index": -1}, {"op": "steer"},
               {"op": "steer", "index": -1}, {"op": "unqueue"}, {"op": "unqueue", "index": 3},
               {"op": "interrupt", "session": "s"}):
        assert roundtrip(idle, op) == [], op


# --------------------------------------------------------------------------------------------
# Approval modes
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("sent,mode", [
    ("manual", "manual"), ("plan", "plan"), ("auto-edit", "auto-edit"), ("auto", "auto"),
    ("full-access", "full-access"), ("read-only", "manual"), ("full-auto", "full-access"),
])
def test_set_approval_mode_all_modes_and_aliases(idle, sent, mode):
    evs = roundtrip(idle, {"op": "set_approval_mode", "mode": sent})
    assert [strip(e) for e in evs] == [{"type": "status", "message": f"approval mode: {mode}"},
                                       {"type": "approval_mode", "mode": mode}]
    roundtrip(idle, {"op": "set_approval_mode", "mode": "manual"})


def test_set_approval_mode_unknown_keeps_mode(idle):
    evs = roundtrip(idle, {"op": "set_approval_mode", "mode": "yolo"})
    assert [strip(e) for e in evs] == [{"type": "error", "message":
        "unknown approval mode 'yolo': use manual, auto-edit, auto, full-access, or plan"}]
    for bad in (None, 3, ["auto"], {"m": 1}, ""):
        evs = roundtrip(idle, {"op": "set_approval_mode", "mode": bad})
        assert len(evs) == 1 and evs[0]["type"] == "error", (bad, evs)


# --------------------------------------------------------------------------------------------
# Validation errors of the structured ops (exact upstream texts)
# --------------------------------------------------------------------------------------------

EXACT_ERRORS = [
    ({"op": "approve"}, "approve requires call_id"),
    ({"op": "approve", "call_id": "  "}, "approve requires call_id"),
    ({"op": "approve", "call_id": "c1"}, "approve requires decision: allow or deny"),
    ({"op": "approve", "call_id": "c1", "decision": "maybe"}, "approve requires decision: allow or deny"),
    ({"op": "approve", "call_id": "c1", "decision": "allow", "hunks": "f0h1"},
     "hunks must be an array of hunk id strings"),
    ({"op": "approve", "call_id": "c1", "decision": "allow", "hunks": [1]},
     "hunks must be an array of hunk id strings"),
    ({"op": "approve", "call_id": "c1", "decision": "allow"}, "no pending approval for that call"),
    ({"op": "set_attended"}, "set_attended requires attended: true or false"),
    ({"op": "set_attended", "attended": "no"}, "set_attended requires attended: true or false"),
    ({"op": "decide_action"}, "decide_action requires action and decision: allow or deny"),
    ({"op": "decide_action", "action": "act-1", "decision": "perhaps"},
     "decide_action requires action and decision: allow or deny"),
    ({"op": "decide_action", "action": "act-1", "decision": "allow"}, "no deferred action act-1"),
    ({"op": "approve_plan"}, "approve_plan requires id"),
    ({"op": "approve_plan", "id": "plan-1"}, "approve_plan requires decision: approve or revise"),
    ({"op": "approve_plan", "id": "plan-1", "decision": "approve"}, "unknown plan: plan-1"),
    ({"op": "approve_plan", "id": "plan-1", "decision": "approve", "mode": "bogus"},
     "unknown approval mode 'bogus': use manual, auto-edit, auto, full-access, or plan"),
    ({"op": "mcp_set"}, "mcp_set requires a server object"),
    ({"op": "mcp_set", "server": "x"}, "mcp_set requires a server object"),
    ({"op": "mcp_remove"}, "mcp_remove requires name"),
    ({"op": "mcp_remove", "name": "ghost"}, "unknown MCP server: ghost"),
    ({"op": "mcp_toggle"}, "mcp_toggle requires name and enabled"),
    ({"op": "mcp_toggle", "name": "ghost"}, "mcp_toggle requires name and enabled"),
    ({"op": "mcp_toggle", "name": "ghost", "enabled": True}, "unknown MCP server: ghost"),
    ({"op": "continue"}, "nothing to continue"),
]


@pytest.mark.parametrize("op,message", EXACT_ERRORS, ids=[json.dumps(o)[:60] for o, _ in EXACT_ERRORS])
def test_validation_errors_have_upstream_texts(idle, op, message):
    evs = roundtrip(idle, op)
    assert [strip(e) for e in evs] == [{"type": "error", "message": message}]


def test_set_attended_round_trip(idle):
    assert [strip(e) for e in roundtrip(idle, {"op": "set_attended", "attended": False})] == [
        {"type": "attended", "attended": False}]
    assert [strip(e) for e in roundtrip(idle, {"op": "set_attended", "attended": True})] == [
        {"type": "attended", "attended": True}]


def test_agent_runs_and_subagent_transcript_shapes(idle):
    m = idle.send({"op": "agent_runs"})
    ev = idle.wait_for("agent_runs", start=m)
    assert ev["workflows"] == [] and ev["agents"] == []
    evs = roundtrip(idle, {"op": "subagent_transcript", "agent_id": "/root/nobody"})
    assert [strip(e) for e in evs] == [{"type": "subagent_transcript", "agent_id": "/root/nobody",
                                        "error": "unknown agent: /root/nobody"}]


def test_mcp_list_answers_with_mcp_servers(idle):
    evs = roundtrip(idle, {"op": "mcp_list"})
    assert [e["type"] for e in evs] == ["mcp_servers"] and evs[0]["servers"] == []


FUZZ_VALUES = [None, 0, -1, 1.5, True, False, "", "x", [], {}, ["a", 1], {"a": 1}, "\u0000",
               10 ** 30, "\U0001F600"]
FUZZ_FIELDS = {
    "command": ["input"],
    "steer": ["index"], "unqueue": ["index"], "interrupt": ["index"],
    "approve": ["call_id", "decision", "always", "hunks"],
    "set_approval_mode": ["mode"],
    "set_attended": ["attended"],
    "decide_action": ["action", "decision"],
    "approve_plan": ["id", "decision", "mode", "feedback"],
    "subagent_transcript": ["agent_id"],
    "mcp_remove": ["name"], "mcp_toggle": ["name", "enabled"],
}


def test_malformed_field_values_never_crash_or_leak(idle):
    """Every op field with every JSON type: the engine answers (or ignores) and stays up."""
    start = idle.mark()
    for opname, fields in FUZZ_FIELDS.items():
        for f in fields:
            for v in FUZZ_VALUES:
                if opname == "command" and isinstance(v, str):
                    continue                       # a string input is a real command
                idle.send({"op": opname, f: v})
    idle.send({"op": "agent_runs", "probe": "end"})
    idle.wait_for(lambda e: e.get("type") == "agent_runs", start=start, timeout=20)
    assert idle.proc.poll() is None
    for ev in idle.since(start):
        assert ev.get("type") != "__non_json__", ev
        if ev.get("type") == "error":
            assert not ev["message"].startswith(("internal error", "protocol bug")), ev
    assert idle.protocol_bugs() == []
    roundtrip(idle, {"op": "set_approval_mode", "mode": "manual"})
    roundtrip(idle, {"op": "set_attended", "attended": True})


@pytest.mark.parametrize("content", [5, ["a"], {"a": 1}, True])
def test_user_message_non_string_content_is_an_error_and_no_turn(idle, content):
    evs = roundtrip(idle, {"op": "user_message", "content": content})
    assert [e["type"] for e in evs] == ["error"]


def test_user_message_bad_images_type_is_error(idle):
    evs = roundtrip(idle, {"op": "user_message", "content": "x", "images": "/a.png"})
    assert [e["type"] for e in evs] == ["error"]


def test_quit_command_exits_zero(engine):
    e = engine(CONFIG)
    e.send({"op": "command", "input": "/quit"})
    assert e.wait_exit(10) == 0


def test_exit_command_exits_zero(engine):
    e = engine(CONFIG)
    e.send({"op": "command", "input": "/exit"})
    assert e.wait_exit(10) == 0


def test_shutdown_exits_zero_without_events(engine):
    e = engine(CONFIG)
    m = e.send({"op": "shutdown", "session": "x"})
    assert e.wait_exit(10) == 0
    e._reader.join(5)
    assert [x["type"] for x in e.since(m) if x["type"] != "model_status"] == []


def test_stdin_eof_exits_zero(engine):
    e = engine(CONFIG)
    e.close_stdin()
    assert e.wait_exit(10) == 0


# --------------------------------------------------------------------------------------------
# Turns
# --------------------------------------------------------------------------------------------

def statuses(evs: list[dict]) -> list[str]:
    return [e["message"] for e in evs if e.get("type") == "status"]


def assert_turn_ends_not_busy(evs: list[dict]) -> None:
    st = statuses(evs)
    assert st and st[-1] not in BUSY, st


def test_normal_turn_event_order_and_types(eng, server):
    server.script({"text": "Hi there.", "reasoning": "hmm",
                   "usage": {"input": 50, "cached": 20, "output": 5, "reasoning": 2}})
    m = eng.send({"op": "user_message", "content": "fix the test"})
    eng.wait_status("ready", start=m)
    evs = [e for e in eng.since(m) if e["type"] != "model_status"]
    types = [e["type"] for e in evs]
    assert types[0] == "user_message" and strip(evs[0]) == {"type": "user_message", "content": "fix the test"}
    for t in ("connecting", "thinking_start", "reasoning_delta", "assistant_start", "assistant_delta",
              "usage", "context_usage"):
        assert t in types, (t, types)
    assert types.index("connecting") < types.index("thinking_start") < types.index("assistant_delta")
    assert types.index("assistant_start") < types.index("assistant_delta")
    u = [e for e in evs if e["type"] == "usage"][0]
    for k in ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens"):
        assert isinstance(u[k], int) and not isinstance(u[k], bool)
    assert u["cached_input_tokens"] == 20
    cu = [e for e in evs if e["type"] == "context_usage"][-1]
    assert isinstance(cu["tokens"], int) and isinstance(cu["tokenizer"], str)
    assert isinstance(cu["cost"], (int, float)) and not isinstance(cu["cost"], bool)
    assert statuses(evs)[-1] == "ready" and types[-1] == "status"
    for e in evs:
        if e["type"] in ("reasoning_delta", "assistant_delta"):
            assert isinstance(e["delta"], str)


def test_assistant_start_before_text_of_every_response(eng, server):
    """Front-end notes §5: text after a tool call must open a new bubble."""
    eng.send({"op": "set_approval_mode", "mode": "full-access"})
    server.script({"text": "Let me look.", "tool_calls": [{"name": "bash", "arguments": {"command": "echo hi"},
                                                          "call_id": "call_1"}]},
                  {"text": "Done now."})
    m = eng.send({"op": "user_message", "content": "go"})
    eng.wait_status("ready", start=m)
    types = [e["type"] for e in eng.since(m) if e["type"] != "model_status"]
    last_tool = max(i for i, t in enumerate(types) if t == "tool_output")
    after = types[last_tool:]
    assert "assistant_start" in after and after.index("assistant_start") < after.index("assistant_delta"), types


@pytest.mark.parametrize("content", [
    "héllo wörld – ✓ 你好", "line1\nline2\r\nline3\ttab", "emoji 😀👍🏽🇫🇷 and zwj 👩‍💻",
    "  leading and trailing spaces  ", "quotes \" and \\ backslash and \u2028 sep",
    "x" * 200_000,
], ids=["unicode", "newlines", "emoji", "spaces", "escapes", "long"])
def test_user_message_echo_is_byte_for_byte(eng, server, content):
    server.script({"text": "ok"})
    m = eng.send({"op": "user_message", "content": content})
    eng.wait_status("ready", start=m, timeout=20)
    echo = eng.wait_for("user_message", start=m)
    assert echo["content"] == content
    assert request_input_texts(server.requests[-1])[-1] == content


def test_approval_round_trip_deny_and_allow(eng, server):
    server.script({"tool_calls": [{"name": "bash", "arguments": {"command": "echo one"}, "call_id": "call_2"}]},
                  {"tool_calls": [{"name": "bash", "arguments": {"command": "echo two"}, "call_id": "call_3"}]},
                  {"text": "finished"})
    m = eng.send({"op": "user_message", "content": "run"})
    req = eng.wait_for("approval_request", start=m)
    assert strip(req) == {"type": "approval_request", "call_id": "call_2", "name": "bash",
                          "summary": req["summary"], "subagent_id": None, "hunks": None}
    assert isinstance(req["summary"], str) and "echo one" in req["summary"]
    # a validation error leaves the request pending
    bad = roundtrip(eng, {"op": "approve", "call_id": "call_2", "decision": "allow", "always": True,
                          "hunks": ["f0h1"]})
    assert errors(bad) and all(e["type"] == "error" for e in bad)
    m2 = eng.send({"op": "approve", "call_id": "call_2", "decision": "deny"})
    out = eng.wait_for("tool_output", start=m2)
    assert out["call_id"] == "call_2" and out["is_error"] is True and "denied by user" in out["output"]
    req2 = eng.wait_for("approval_request", start=m2)
    m3 = eng.send({"op": "approve", "call_id": req2["call_id"], "decision": "allow", "always": False})
    out2 = eng.wait_for("tool_output", start=m3)
    assert out2["is_error"] is False and "two" in out2["output"]
    eng.wait_status("ready", start=m3)
    assert_turn_ends_not_busy(eng.since(m))


def test_invalid_utf8_tool_output_is_replaced(eng, server):
    eng.send({"op": "set_approval_mode", "mode": "full-access"})
    server.script({"tool_calls": [{"name": "bash", "arguments": {"command": "printf 'a\\377\\376b\\n'"},
                                   "call_id": "call_1"}]}, {"text": "ok"})
    m = eng.send({"op": "user_message", "content": "bytes"})
    eng.wait_status("ready", start=m)
    out = eng.wait_for("tool_output", start=m)
    assert "\ufffd" in out["output"]
    for raw in eng.raw_lines:
        raw.decode("utf-8")
        assert b"\\udc" not in raw.lower() and b"\\ud8" not in raw.lower()


def queue_msg(e: EngineProc, content: str, **extra) -> int:
    """Queue a message behind the running turn and wait until the engine has answered it."""
    m = e.send(dict({"op": "user_message", "content": content}, **extra))
    e.wait_for(lambda ev: ev.get("type") == "pending_messages" and ev["messages"][-1:] == [content], start=m)
    e.wait_for(lambda ev: ev.get("type") == "status" and ev["message"] == "streaming", start=m)
    return m


def stall_reply(text="slow"):
    return {"text": text, "stall": 5}


def test_queue_status_then_streaming_then_auto_start(eng, server):
    server.script(stall_reply("first"), {"text": "second"})
    m = eng.send({"op": "user_message", "content": "one"})
    eng.wait_for("assistant_delta", start=m)
    m2 = eng.send({"op": "user_message", "content": "two"})
    eng.wait_for(lambda e: e.get("type") == "status" and e["message"] == "streaming", start=m2)
    evs = [e for e in eng.since(m2) if e["type"] not in ("model_status", "assistant_delta")]
    assert [strip(e) for e in evs[:3]] == [{"type": "pending_messages", "messages": ["two"]},
                                           {"type": "status", "message": "queued: 1"},
                                           {"type": "status", "message": "streaming"}]
    assert "user_message" not in [e["type"] for e in evs]
    eng.send({"op": "interrupt"})
    echo = eng.wait_for(lambda e: e.get("type") == "user_message" and e["content"] == "two", start=m2)
    assert echo
    eng.wait_status("ready", start=m2)
    assert request_input_texts(server.requests[-1])[-1] == "two"


def test_interrupt_emits_info_and_status(eng, server):
    server.script(stall_reply())
    m = eng.send({"op": "user_message", "content": "one"})
    eng.wait_for("assistant_delta", start=m)
    m2 = eng.send({"op": "interrupt"})
    eng.wait_status("interrupted", start=m2)
    evs = [strip(e) for e in eng.since(m2) if e["type"] != "model_status"]
    assert evs[:2] == [{"type": "info", "message": "request interrupted"},
                       {"type": "status", "message": "interrupted"}]
    # idle again: a second interrupt is a no-op
    assert roundtrip(eng, {"op": "interrupt"}) == []


def test_interrupt_with_index_starts_that_message_next(eng, server):
    server.script(stall_reply(), {"text": "b-answer"})
    m = eng.send({"op": "user_message", "content": "one"})
    eng.wait_for("assistant_delta", start=m)
    queue_msg(eng, "a")
    queue_msg(eng, "b")
    m2 = eng.send({"op": "interrupt", "index": -1})
    echo = eng.wait_for("user_message", start=m2)
    assert echo["content"] == "b"
    st = eng.wait_status("interrupted", start=m2)
    assert st
    pend = [e["messages"] for e in eng.since(m2, "pending_messages")]
    assert pend and pend[-1] == ["a"]
    eng.send({"op": "unqueue"})      # don't run "a" afterwards
    eng.wait_status("ready", start=m2)


def test_unqueue_returns_the_message(eng, server):
    server.script(stall_reply())
    m = eng.send({"op": "user_message", "content": "one"})
    eng.wait_for("assistant_delta", start=m)
    queue_msg(eng, "a")
    queue_msg(eng, "b")
    evs = roundtrip(eng, {"op": "unqueue", "index": 0})
    assert [strip(e) for e in evs] == [{"type": "pending_messages", "messages": ["b"]},
                                       {"type": "unqueued", "content": "a", "images": []}]
    assert roundtrip(eng, {"op": "unqueue", "index": 5}) == []
    evs = roundtrip(eng, {"op": "unqueue", "index": -1})
    assert [strip(e) for e in evs] == [{"type": "pending_messages", "messages": []},
                                       {"type": "unqueued", "content": "b", "images": []}]
    eng.send({"op": "interrupt"})
    eng.wait_status("interrupted", start=m)


def test_steer_delivers_into_running_turn(eng, server):
    eng.send({"op": "set_approval_mode", "mode": "full-access"})
    server.script({"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 1; echo done"},
                                   "call_id": "call_1"}]},
                  {"text": "steered ok"})
    m = eng.send({"op": "user_message", "content": "start"})
    eng.wait_for("tool_start", start=m)
    queue_msg(eng, "first queued")
    queue_msg(eng, "also this")
    # the running command's own events (tool_update progress, ...) may interleave with any op's
    noise = ("assistant_delta", "assistant_start", "connecting", "thinking_start", "usage", "context_usage",
             "tool_output", "tool_update", "user_message")
    evs = roundtrip(eng, {"op": "steer", "index": -1})
    assert [strip(e) for e in evs if e["type"] not in noise] == [
        {"type": "status", "message": "steering"}, {"type": "pending_messages", "messages": ["first queued"]}]
    assert [e for e in roundtrip(eng, {"op": "steer", "index": 7}) if e["type"] not in noise] == []
    assert [e["type"] for e in roundtrip(eng, {"op": "unqueue"}) if e["type"] not in noise] == [
        "pending_messages", "unqueued"]
    echo = eng.wait_for(lambda e: e.get("type") == "user_message" and e["content"] == "also this", start=m)
    assert echo
    eng.wait_for(lambda e: e.get("type") == "assistant_delta", start=m)
    texts = request_input_texts(server.requests[1])
    assert "also this" in texts
    eng.wait_status("ready", start=m)
    assert_turn_ends_not_busy(eng.since(m))


def test_steer_with_images_restarts_turn(eng, server, tmp_path):
    png = tmp_path / "pic.png"
    png.write_bytes(bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
                                  "0000000d4944415478da63f8ffff3f0005fe02fea7d6a4a40000000049454e44ae426082"))
    server.script(stall_reply(), {"text": "saw image"})
    m = eng.send({"op": "user_message", "content": "one"})
    eng.wait_for("assistant_delta", start=m)
    queue_msg(eng, "look", images=[str(png)])
    m2 = eng.send({"op": "steer"})
    echo = eng.wait_for("user_message", start=m2)
    assert echo["content"] == "look"
    evs = [e for e in eng.since(m2) if e["type"] != "model_status"]
    assert strip(evs[0]) == {"type": "status", "message": "steering"}
    assert "interrupted" not in statuses(eng.since(m2))
    eng.wait_status("ready", start=m2)


def test_continue_after_failed_turn(eng, server):
    server.script({"status": 400, "body": {"error": {"message": "bad thing", "type": "invalid_request_error"}}},
                  {"text": "recovered"})
    m = eng.send({"op": "user_message", "content": "try"})
    eng.wait_status("ready", start=m)
    evs = [e for e in eng.since(m) if e["type"] != "model_status"]
    assert "error" in [e["type"] for e in evs]
    m2 = eng.send({"op": "continue", "session": "x"})
    eng.wait_status("ready", start=m2)
    evs2 = [e for e in eng.since(m2) if e["type"] != "model_status"]
    assert "user_message" not in [e["type"] for e in evs2]
    assert "".join(e["delta"] for e in evs2 if e["type"] == "assistant_delta") == "recovered"


def test_continue_while_running_is_an_error(eng, server):
    server.script(stall_reply())
    m = eng.send({"op": "user_message", "content": "one"})
    eng.wait_for("assistant_delta", start=m)
    evs = roundtrip(eng, {"op": "continue"})
    assert [strip(e) for e in evs] == [{"type": "error", "message": "a turn is already running"}]
    eng.send({"op": "interrupt"})
    eng.wait_status("interrupted", start=m)


def test_unattended_defers_then_decide_action(eng, server):
    server.script({"tool_calls": [{"name": "bash", "arguments": {"command": "echo deferred"}, "call_id": "call_1"}]},
                  {"text": "waiting"}, {"text": "noted"})
    eng.send({"op": "set_attended", "attended": False})
    m = eng.send({"op": "user_message", "content": "do it"})
    d = eng.wait_for("action_deferred", start=m)
    for k in ("id", "session_id", "cwd", "call_id", "name", "arguments", "summary", "digest"):
        assert isinstance(d[k], str), k
    assert isinstance(d["created_at"], int) and d["subagent_id"] is None
    out = eng.wait_for("tool_output", start=m)
    assert out["is_error"] is False and "submitted for confirmation" in out["output"]
    eng.wait_status("ready", start=m)
    assert "approval_request" not in [e["type"] for e in eng.since(m)]
    m2 = eng.send({"op": "decide_action", "action": d["id"], "decision": "deny"})
    dec = eng.wait_for("action_decided", start=m2)
    assert strip(dec) == {"type": "action_decided", "id": d["id"], "decision": "deny", "output": None,
                          "is_error": dec["is_error"]}
    eng.wait_for("user_message", start=m2)
    eng.wait_status("ready", start=m2)


def test_every_turn_ends_with_non_busy_status_after_tool_error(eng, server):
    server.script({"tool_calls": [{"name": "no_such_tool", "arguments": {}, "call_id": "call_x"}]},
                  {"text": "ok"})
    m = eng.send({"op": "user_message", "content": "x"})
    eng.wait_status("ready", start=m)
    out = eng.wait_for("tool_output", start=m)
    assert out["is_error"] is True and out["call_id"] == "call_x"
    assert_turn_ends_not_busy(eng.since(m))


def test_unattachable_image_is_info_and_skipped(eng, server, tmp_path):
    server.script({"text": "ok"})
    missing = str(tmp_path / "nope.png")
    m = eng.send({"op": "user_message", "content": "see", "images": [missing, 7]})
    eng.wait_status("ready", start=m)
    infos = [e["message"] for e in eng.since(m, "info")]
    assert any(i.startswith(f"skipped attachment {missing}: ") for i in infos), infos
    echo = eng.wait_for("user_message", start=m)
    assert echo["content"] == "see" and not echo.get("images")


def test_files_are_echoed_and_announced_to_the_model(eng, server, tmp_path):
    f = tmp_path / "notes.bin"
    f.write_bytes(b"\x00\x01")
    server.script({"text": "ok"})
    m = eng.send({"op": "user_message", "content": "read it", "files": [str(f)]})
    eng.wait_status("ready", start=m)
    echo = eng.wait_for("user_message", start=m)
    assert echo["content"] == "read it" and echo["files"] == [str(f)]
    sent = request_input_texts(server.requests[-1])[-1]
    assert sent.startswith("read it") and f'[Attached file "notes.bin" is saved at: {f}]' in sent


def test_model_status_state_follows_queue(eng, server):
    server.script(stall_reply())
    m = eng.send({"op": "user_message", "content": "one"})
    eng.wait_for(lambda e: e.get("type") == "model_status" and e["state"] == "streaming", start=m)
    queue_msg(eng, "two")
    eng.wait_for(lambda e: e.get("type") == "model_status" and e["state"] == "queued: 1", start=m)
    eng.send({"op": "unqueue"})
    eng.send({"op": "interrupt"})
    eng.wait_for(lambda e: e.get("type") == "model_status" and e["state"] == "ready", start=m)


def test_interrupt_clears_pending_approval(eng, server):
    server.script({"tool_calls": [{"name": "bash", "arguments": {"command": "echo x"}, "call_id": "call_9"}]})
    m = eng.send({"op": "user_message", "content": "run"})
    eng.wait_for("approval_request", start=m)
    m2 = eng.send({"op": "interrupt"})
    eng.wait_status("interrupted", start=m2)
    evs = roundtrip(eng, {"op": "approve", "call_id": "call_9", "decision": "allow"})
    assert [strip(e) for e in evs] == [{"type": "error", "message": "no pending approval for that call"}]


def test_loosening_mode_releases_parked_approval(eng, server):
    server.script({"tool_calls": [{"name": "bash", "arguments": {"command": "echo released"}, "call_id": "call_1"}]},
                  {"text": "ok"})
    m = eng.send({"op": "user_message", "content": "run"})
    eng.wait_for("approval_request", start=m)
    eng.send({"op": "set_approval_mode", "mode": "full-access"})
    out = eng.wait_for("tool_output", start=m)
    assert out["is_error"] is False and "released" in out["output"]
    eng.wait_status("ready", start=m)


def test_always_allowlists_the_tool_for_the_session(eng, server):
    server.script({"tool_calls": [{"name": "bash", "arguments": {"command": "echo a"}, "call_id": "call_1"}]},
                  {"tool_calls": [{"name": "bash", "arguments": {"command": "echo b"}, "call_id": "call_2"}]},
                  {"text": "ok"})
    m = eng.send({"op": "user_message", "content": "run"})
    eng.wait_for("approval_request", start=m)
    eng.send({"op": "approve", "call_id": "call_1", "decision": "allow", "always": True})
    eng.wait_status("ready", start=m)
    assert len(eng.since(m, "approval_request")) == 1
    assert [o["is_error"] for o in eng.since(m, "tool_output")] == [False, False]


def test_tightening_mode_does_not_affect_the_running_turn(eng, server):
    eng.send({"op": "set_approval_mode", "mode": "full-access"})
    server.script({"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 0.6; echo one"},
                                   "call_id": "call_1"}]},
                  {"tool_calls": [{"name": "bash", "arguments": {"command": "echo two"}, "call_id": "call_2"}]},
                  {"text": "ok"})
    m = eng.send({"op": "user_message", "content": "run"})
    eng.wait_for("tool_start", start=m)
    eng.send({"op": "set_approval_mode", "mode": "manual"})
    st = eng.wait_for(lambda e: e.get("type") == "approval_request"
                      or (e.get("type") == "status" and e["message"] == "ready"), start=m)
    if st["type"] == "approval_request":
        eng.send({"op": "interrupt"})
        eng.wait_status("interrupted", start=m)
    assert st["type"] == "status", "the in-flight turn asked for approval after the mode tightened"


def test_plan_propose_and_approve_plan(eng, server):
    eng.send({"op": "set_approval_mode", "mode": "plan"})
    server.script({"tool_calls": [{"name": "propose_plan", "call_id": "call_p",
                                   "arguments": {"title": "Fix it", "plan": "1. do\n2. test"}}]},
                  {"text": "implementing"})
    m = eng.send({"op": "user_message", "content": "plan please"})
    plan = eng.wait_for("proposed_plan", start=m)
    assert strip(plan) == {"type": "proposed_plan", "id": plan["id"], "title": "Fix it",
                           "markdown": plan["markdown"], "status": "pending"}
    assert "1. do" in plan["markdown"]
    eng.wait_status("ready", start=m)
    assert len(server.requests) == 1                       # propose_plan ended the turn
    evs = roundtrip(eng, {"op": "approve_plan", "id": plan["id"], "decision": "approve", "mode": "plan"})
    assert errors(evs) and all(e["type"] == "error" for e in evs)          # plan is not allowed
    evs = roundtrip(eng, {"op": "approve_plan", "id": plan["id"], "decision": "revise"})
    assert [strip(e) for e in evs] == [{"type": "error", "message": "revising a plan needs feedback"}]
    m2 = eng.send({"op": "approve_plan", "id": plan["id"], "decision": "approve"})
    again = eng.wait_for("proposed_plan", start=m2)
    assert again["id"] == plan["id"] and again["status"] == "approved"
    assert eng.wait_for("approval_mode", start=m2)["mode"] == "auto-edit"
    eng.wait_status("ready", start=m2)
    evs = roundtrip(eng, {"op": "approve_plan", "id": plan["id"], "decision": "approve"})
    assert [strip(e) for e in evs] == [{"type": "error", "message": "this plan was already approved"}]


def test_approve_hunk_validation_texts_leave_request_pending(eng, server):
    server.script({"tool_calls": [{"name": "bash", "arguments": {"command": "echo h"}, "call_id": "call_h"}]},
                  {"text": "ok"})
    m = eng.send({"op": "user_message", "content": "run"})
    eng.wait_for("approval_request", start=m)
    cases = [
        ({"always": True, "hunks": ["f0h1"], "decision": "allow"},
         "--hunks cannot be combined with always; approve the whole call to allowlist the tool"),
        ({"hunks": ["f0h1"], "decision": "deny"}, "--hunks requires allow; use plain deny to reject the whole call"),
        ({"hunks": ["f0h1"], "decision": "allow"},
         "call call_h does not support hunk selection; use plain allow or deny"),
    ]
    for extra, message in cases:
        evs = roundtrip(eng, dict({"op": "approve", "call_id": "call_h"}, **extra))
        assert [strip(e) for e in evs] == [{"type": "error", "message": message}], extra
    m2 = eng.send({"op": "approve", "call_id": "call_h", "decision": "allow", "hunks": None})
    out = eng.wait_for("tool_output", start=m2)
    assert out["call_id"] == "call_h" and out["is_error"] is False
    eng.wait_status("ready", start=m2)


def test_unread_steer_runs_as_the_next_turn(eng, server):
    server.script({"text": "slow answer", "stall": 0.8}, {"text": "second turn"})
    m = eng.send({"op": "user_message", "content": "one"})
    eng.wait_for("assistant_delta", start=m)
    queue_msg(eng, "late steer")
    eng.send({"op": "steer"})
    echo = eng.wait_for(lambda e: e.get("type") == "user_message" and e["content"] == "late steer", start=m)
    assert echo
    eng.wait_for(lambda e: e.get("type") == "assistant_delta" and e["delta"].startswith("seco"), start=m)
    eng.wait_status("ready", start=eng.events.index(echo))
    assert request_input_texts(server.requests[-1])[-1] == "late steer"
    assert_turn_ends_not_busy(eng.since(m))


def test_turn_that_cannot_start_still_ends_not_busy(engine):
    e = engine({"retry_attempts": 0}, api_key=None)
    m = e.send({"op": "user_message", "content": "hello"})
    e.wait_for("error", start=m)
    e.wait_for(lambda ev: ev.get("type") == "status" and ev["message"] not in BUSY, start=m)
    assert_turn_ends_not_busy(e.since(m))
