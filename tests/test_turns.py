"""Real turns through the engine subprocess against the scripted model server."""

import signal
import time

import pytest

from fakeserver import request_input_texts
from harness import pid_alive, read_pid_file, wait_until


CONFIG = {"edit_tools": ["write", "str_replace"]}


@pytest.fixture
def eng(engine):
    return engine(CONFIG)


def test_streamed_text_turn_event_order(eng, server):
    server.script({"text": "Hello there, friend!", "reasoning": "Think first.",
                   "usage": {"input": 1234, "cached": 800, "output": 56, "reasoning": 12}})
    m = eng.send({"op": "user_message", "content": "fix the test"})
    eng.wait_status("ready", start=m)
    evs = [e for e in eng.since(m) if e["type"] != "model_status"]
    types = [e["type"] for e in evs]
    assert evs[0] == {"type": "user_message", "content": "fix the test", "session": evs[0]["session"]}
    order = ["user_message", "connecting", "thinking_start", "reasoning_delta", "assistant_start",
             "assistant_delta", "usage"]
    pos = [types.index(t) for t in order]
    assert pos == sorted(pos), types
    assert "context_usage" in types[types.index("usage"):], types
    assert types[-1] == "status" and evs[-1]["message"] == "ready"
    text = "".join(e["delta"] for e in evs if e["type"] == "assistant_delta")
    assert text == "Hello there, friend!"
    assert "".join(e["delta"] for e in evs if e["type"] == "reasoning_delta") == "Think first."
    usage = [e for e in evs if e["type"] == "usage"][0]
    assert (usage["input_tokens"], usage["cached_input_tokens"], usage["output_tokens"],
            usage["reasoning_tokens"]) == (1234, 800, 56, 12)
    cu = [e for e in evs if e["type"] == "context_usage"][-1]
    assert cu["tokens"] > 0 and isinstance(cu["cost"], (int, float))
    eng.wait_for(lambda e: e.get("type") == "model_status" and e["state"] == "ready", start=m)
    assert "streaming" in [e["state"] for e in eng.since(m, "model_status")]
    req = server.requests[-1]
    assert req["path"].endswith("/responses")
    body = req["body"]
    assert body["stream"] is True and body["store"] is False
    assert body["prompt_cache_key"] == eng.events[1]["session_id"]
    assert req["headers"]["session-id"] == eng.events[1]["session_id"]
    assert request_input_texts(req)[-1] == "fix the test"


def test_tool_call_output_reaches_second_request(eng, server):
    eng.send({"op": "set_approval_mode", "mode": "full-access"})
    server.script({"tool_calls": [{"name": "bash", "arguments": {"command": "echo from-the-shell"}, "call_id": "call_1"}]},
                  {"text": "All done."})
    m = eng.send({"op": "user_message", "content": "run it"})
    eng.wait_status("ready", start=m)
    out = eng.wait_for("tool_output", start=m)
    assert out["call_id"] == "call_1" and out["name"] == "bash" and out["is_error"] is False
    assert "from-the-shell" in out["output"]
    start_ev = eng.wait_for("tool_start", start=m)
    assert start_ev["call_id"] == "call_1"
    assert any(e["type"] == "tool_update" for e in eng.since(m))
    second = server.requests[-1]["body"]["input"]
    outputs = [i for i in second if i.get("type") == "function_call_output"]
    assert outputs and outputs[0]["call_id"] == "call_1" and "from-the-shell" in outputs[0]["output"]
    # a new assistant bubble after the tool card (front-end notes §5)
    types = [e["type"] for e in eng.since(m)]
    assert types.index("assistant_start", types.index("tool_output")) > types.index("tool_output")
    assert len([e for e in eng.since(m) if e["type"] == "usage"]) == 2


def test_chat_completions_protocol(engine, server):
    e = engine({**CONFIG, "protocol": "chat"})
    server.script({"text": "chat says hi", "reasoning": "hmm"})
    m = e.send({"op": "user_message", "content": "hello"})
    e.wait_status("ready", start=m)
    assert "".join(x["delta"] for x in e.since(m, "assistant_delta")) == "chat says hi"
    assert "".join(x["delta"] for x in e.since(m, "reasoning_delta")) == "hmm"
    req = server.requests[-1]
    assert req["path"].endswith("/chat/completions")
    assert req["body"]["messages"][0]["role"] == "system"
    assert req["body"]["stream_options"] == {"include_usage": True}


def test_manual_mode_deny_then_allow_with_file_system_checked(eng, server):
    target = eng.cwd / "hello.txt"
    server.script({"tool_calls": [{"name": "write", "arguments": {"path": "hello.txt", "content": "one\n"}, "call_id": "w1"}]},
                  {"text": "ok, not written"})
    m = eng.send({"op": "user_message", "content": "write it"})
    req = eng.wait_for("approval_request", start=m)
    assert req["call_id"] == "w1" and req["name"] == "write" and req["subagent_id"] is None
    assert req["summary"] == "hello.txt"
    assert req["hunks"] is None or req["hunks"][0]["id"] == "f0h1"
    # validation errors leave the request pending
    m2 = eng.send({"op": "approve", "call_id": "nope", "decision": "allow"})
    assert eng.wait_for("error", start=m2)["message"] == "no pending approval for that call"
    m2 = eng.send({"op": "approve", "call_id": "w1", "decision": "maybe"})
    assert eng.wait_for("error", start=m2)["message"] == "approve requires decision: allow or deny"
    m2 = eng.send({"op": "approve", "call_id": "w1", "decision": "deny", "hunks": ["f0h1"]})
    assert "requires allow" in eng.wait_for("error", start=m2)["message"]
    eng.send({"op": "approve", "call_id": "w1", "decision": "deny"})
    out = eng.wait_for("tool_output", start=m)
    assert out["is_error"] is True and "denied by user" in out["output"]
    eng.wait_status("ready", start=m)
    assert not target.exists()
    assert "denied by user" in server.requests[-1]["body"]["input"][-1]["output"]

    server.script({"tool_calls": [{"name": "write", "arguments": {"path": "hello.txt", "content": "two\n"}, "call_id": "w2"}]},
                  {"text": "written"})
    m = eng.send({"op": "command", "input": "/approve"})
    assert eng.wait_for("error", start=m)["message"].startswith("usage: /approve")
    m = eng.send({"op": "user_message", "content": "write it again"})
    eng.wait_for("approval_request", start=m)
    eng.send({"op": "command", "input": "/approve w2 allow always"})
    out = eng.wait_for("tool_output", start=m)
    assert out["is_error"] is False
    eng.wait_status("ready", start=m)
    assert target.read_text() == "two\n"
    diff_out = out["output"]
    assert "+++ b/hello.txt" in diff_out
    # allowlisted: the next write runs without asking
    server.script({"tool_calls": [{"name": "write", "arguments": {"path": "b.txt", "content": "x"}, "call_id": "w3"}]},
                  {"text": "done"})
    m = eng.send({"op": "user_message", "content": "and another"})
    eng.wait_status("ready", start=m)
    assert not eng.since(m, "approval_request")
    assert (eng.cwd / "b.txt").read_text() == "x"


def test_retry_after_500_then_success(eng, server):
    server.script({"status": 500}, {"text": "recovered"})
    m = eng.send({"op": "user_message", "content": "try"})
    eng.wait_status("ready", start=m, timeout=15)
    r = eng.wait_for("retrying", start=m)
    assert r["attempt"] == 2 and r["max_attempts"] == 6 and "HTTP 500" in r["reason"]
    assert "".join(x["delta"] for x in eng.since(m, "assistant_delta")) == "recovered"
    assert not eng.since(m, "error")


def test_non_retryable_error_ends_turn_with_error_then_ready(eng, server):
    server.script({"status": 400, "body": {"error": {"message": "bad request here"}}})
    m = eng.send({"op": "user_message", "content": "try"})
    eng.wait_status("ready", start=m)
    err = eng.wait_for("error", start=m)
    assert "400" in err["message"]
    types = eng.types_since(m)
    assert types.index("error") < len(types) - 1 - types[::-1].index("status")
    # continue re-runs the failed turn
    server.script({"text": "second time lucky"})
    m = eng.send({"op": "continue"})
    eng.wait_status("ready", start=m)
    assert "".join(x["delta"] for x in eng.since(m, "assistant_delta")) == "second time lucky"


def test_dropped_connection_and_truncated_stream_are_retried(eng, server):
    server.script({"drop": True}, {"text": "partial", "truncate_after": 4}, {"text": "whole"})
    m = eng.send({"op": "user_message", "content": "go"})
    eng.wait_status("ready", start=m, timeout=20)
    assert len(eng.since(m, "retrying")) == 2
    assert not eng.since(m, "error")


def test_missing_api_key(engine, server):
    e = engine(api_key=None, wait=False)
    e.wait_startup()
    ms = [x for x in e.events if x["type"] == "model_status"][0]
    assert ms.get("api_key") == "missing"
    m = e.send({"op": "user_message", "content": "hi"})
    err = e.wait_for("error", start=m)
    assert "OPENAI_API_KEY is not set" in err["message"]
    e.wait_status("ready", start=m)
    assert not server.requests


def test_images_and_files_attachments(eng, server, tmp_path):
    png = tmp_path / "pic.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
    doc = tmp_path / "notes.pdf"
    doc.write_bytes(b"%PDF-1.4")
    server.script({"text": "seen"})
    m = eng.send({"op": "user_message", "content": "look", "images": [str(png), "/nope/missing.png", 7],
                  "files": [str(doc)]})
    eng.wait_status("ready", start=m)
    info = eng.wait_for("info", start=m)
    assert info["message"].startswith("skipped attachment /nope/missing.png")
    echo = eng.wait_for("user_message", start=m)
    assert echo["content"] == "look" and echo["files"] == [str(doc)] and echo["images"] == [str(png)]
    users = [i for i in server.requests[-1]["body"]["input"] if i.get("role") == "user"]
    parts = [p for u in users for p in u["content"]]
    assert any(p["type"] == "input_image" and p["image_url"].startswith("data:image/png;base64,") for p in parts)
    assert parts[0]["text"].endswith(f'[Attached file "notes.pdf" is saved at: {doc}]')


def test_queue_steer_unqueue(eng, server):
    eng.send({"op": "set_approval_mode", "mode": "full-access"})
    gate = eng.cwd / "go"
    wait_cmd = "for i in $(seq 200); do [ -f go ] && break; sleep 0.05; done"
    server.script({"tool_calls": [{"name": "bash", "arguments": {"command": wait_cmd}, "call_id": "s1"}]},
                  {"text": "after steer"}, {"text": "q2 answer"})
    m = eng.send({"op": "user_message", "content": "first"})
    eng.wait_for("tool_start", start=m)
    for text in ("steer me", "keep me", "drop me"):
        q = eng.send({"op": "user_message", "content": text})
        eng.wait_for("pending_messages", start=q)
    pend = eng.since(m, "pending_messages")[-1]
    assert pend["messages"] == ["steer me", "keep me", "drop me"]
    eng.wait_status("queued: 3", start=m)
    u = eng.send({"op": "unqueue", "index": -1})
    un = eng.wait_for("unqueued", start=u)
    assert un["content"] == "drop me"
    assert eng.wait_for("pending_messages", start=u)["messages"] == ["steer me", "keep me"]
    eng.send({"op": "unqueue", "index": 9})            # out of range: no-op
    s = eng.send({"op": "steer", "index": 0})
    assert eng.wait_status("steering", start=s)
    assert eng.wait_for("pending_messages", start=s)["messages"] == ["keep me"]
    gate.write_text("go")
    echo = eng.wait_for(lambda e: e.get("type") == "user_message" and e["content"] == "steer me", start=s)
    assert echo
    eng.wait_for(lambda e: e.get("type") == "status" and e["message"] == "queued: 1", start=s, timeout=15)
    # the steered text was in the second model request of the first turn
    assert "steer me" in request_input_texts(server.requests[1])
    # the queued message starts by itself as the next turn
    eng.wait_for(lambda e: e.get("type") == "user_message" and e["content"] == "keep me", start=s, timeout=15)
    eng.wait_status("ready", start=s, timeout=15)
    assert len(server.requests) == 3


def test_interrupt_kills_process_group_and_queue_survives(eng, server, tmp_path):
    eng.send({"op": "set_approval_mode", "mode": "full-access"})
    pidfile = tmp_path / "pid"
    cmd = f"sh -c 'sleep 30 & echo $! > {pidfile}; wait'"
    server.script({"tool_calls": [{"name": "bash", "arguments": {"command": cmd}, "call_id": "b1"}]},
                  {"text": "next turn ran"})
    m = eng.send({"op": "user_message", "content": "long"})
    eng.wait_for("tool_update", start=m)
    pid = read_pid_file(pidfile, 1)[0]
    eng.send({"op": "user_message", "content": "queued during run"})
    t0 = time.monotonic()
    i = eng.send({"op": "interrupt"})
    assert eng.wait_for("info", start=i)["message"] == "request interrupted"
    eng.wait_status("interrupted", start=i)
    assert wait_until(lambda: not pid_alive(pid), timeout=1.0 - (time.monotonic() - t0), interval=0.02), \
        "grandchild survived the interrupt"
    # the queued message still starts as the next turn
    eng.wait_for(lambda e: e.get("type") == "user_message" and e["content"] == "queued during run", start=i)
    eng.wait_status("ready", start=i)


def test_interrupt_mid_stream_and_interrupt_with_index(eng, server):
    server.script({"text": "a long answer " * 20, "stall": 30}, {"text": "second"})
    m = eng.send({"op": "user_message", "content": "stream"})
    eng.wait_for("assistant_delta", start=m)
    eng.send({"op": "user_message", "content": "A"})
    eng.send({"op": "user_message", "content": "B"})
    t0 = time.monotonic()
    i = eng.send({"op": "interrupt", "index": -1})
    eng.wait_status("interrupted", start=i)
    assert time.monotonic() - t0 < 1.0
    first = eng.wait_for("user_message", start=i)
    assert first["content"] == "B"           # "interrupt and send" moved it to the front
    assert eng.since(i, "pending_messages")[0]["messages"] == ["A"]
    eng.wait_status("ready", start=i)
    eng.send({"op": "interrupt"})             # idle or running "A": either way no crash


def test_eof_mid_turn_exits_zero_and_leaves_no_child(engine, tmp_path, server):
    e = engine({**CONFIG, "approval_mode": "full-access"})
    pidfile = tmp_path / "pid2"
    server.script({"tool_calls": [{"name": "bash", "arguments": {"command": f"sleep 30 & echo $! > {pidfile}; wait"},
                                   "call_id": "b9"}]})
    m = e.send({"op": "user_message", "content": "long"})
    e.wait_for("tool_update", start=m)
    pid = read_pid_file(pidfile, 1)[0]
    e.close_stdin()
    assert e.wait_exit(10) == 0
    assert wait_until(lambda: not pid_alive(pid), timeout=2.0, interval=0.02), "child outlived the engine"
    e.close()


def test_parallel_read_batch_outputs_in_call_order(eng, server):
    for i in range(4):
        (eng.cwd / f"f{i}.txt").write_text(f"file {i}\n")
    calls = [{"name": "read", "arguments": {"path": f"f{i}.txt"}, "call_id": f"r{i}"} for i in range(4)]
    server.script({"tool_calls": calls}, {"text": "read them"})
    m = eng.send({"op": "user_message", "content": "read all"})
    eng.wait_status("ready", start=m)
    starts = [e["call_id"] for e in eng.since(m, "tool_start")]
    outs = [e["call_id"] for e in eng.since(m, "tool_output")]
    assert starts == outs == ["r0", "r1", "r2", "r3"]
    types = eng.types_since(m)
    assert types.index("tool_output") > max(i for i, t in enumerate(types) if t == "tool_start")
    assert not eng.since(m, "approval_request")


def test_unknown_tool_and_bad_arguments_are_tool_errors(eng, server):
    server.script({"tool_calls": [{"name": "teleport", "arguments": {}, "call_id": "x1"},
                                  {"name": "read", "arguments": "{not json", "call_id": "x2"}]},
                  {"text": "ok"})
    m = eng.send({"op": "user_message", "content": "do odd things"})
    eng.wait_status("ready", start=m)
    outs = {e["call_id"]: e for e in eng.since(m, "tool_output")}
    assert outs["x1"]["is_error"] and "unknown tool: teleport" in outs["x1"]["output"]
    assert outs["x2"]["is_error"] and "invalid JSON arguments" in outs["x2"]["output"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_terminate_signal_mid_turn_exits_zero_and_leaves_no_child(engine, tmp_path, server, sig):
    """SIGTERM/SIGHUP shut down like EOF: exit 0, the running command's group killed."""
    e = engine({**CONFIG, "approval_mode": "full-access"})
    pidfile = tmp_path / f"pid-{int(sig)}"
    server.script({"tool_calls": [{"name": "bash", "arguments": {"command": f"sleep 30 & echo $! > {pidfile}; wait"},
                                   "call_id": "t1"}]})
    m = e.send({"op": "user_message", "content": "long"})
    e.wait_for("tool_update", start=m)
    pid = read_pid_file(pidfile, 1)[0]
    e.proc.send_signal(sig)
    assert e.wait_exit(10) == 0
    assert wait_until(lambda: not pid_alive(pid), timeout=2.0, interval=0.02), "child outlived the engine"


def test_steer_with_images_starts_a_new_turn(eng, server, tmp_path):
    png = tmp_path / "s.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 16)
    server.script({"text": "slow " * 30, "stall": 30}, {"text": "image turn"})
    m = eng.send({"op": "user_message", "content": "stream"})
    eng.wait_for("assistant_delta", start=m)
    eng.send({"op": "user_message", "content": "with picture", "images": [str(png)]})
    s = eng.send({"op": "steer"})
    eng.wait_status("steering", start=s)
    echo = eng.wait_for("user_message", start=s)
    assert echo["content"] == "with picture"
    after = eng.events.index(echo)       # deltas of the old turn may still trail the steer op
    eng.wait_status("ready", start=after)
    assert not [e for e in eng.since(s, "status") if e["message"] == "interrupted"]
    assert "".join(x["delta"] for x in eng.since(after, "assistant_delta")) == "image turn"


def test_model_status_only_on_change(eng, server):
    m = eng.send({"op": "command", "input": "/permissions"})
    eng.wait_for("approval_mode", start=m)
    m2 = eng.send({"op": "command", "input": "/permissions"})
    eng.wait_for("approval_mode", start=m2)
    assert not eng.since(m, "model_status")
    server.script({"text": "x"})
    m = eng.send({"op": "user_message", "content": "go"})
    eng.wait_for(lambda e: e.get("type") == "model_status" and e["state"] == "ready", start=m)
    states = [e["state"] for e in eng.since(m, "model_status")]
    assert states == ["streaming", "ready"]
