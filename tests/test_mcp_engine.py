"""MCP wired into the running engine (issue 8), end to end: the real engine as a subprocess,
a scripted model (FakeModelServer) and real MCP servers (server-everything, mcp-server-time,
both installed by .ci/install-mcp.sh; tests skip with a reason when they are missing).
"""

import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EVERYTHING = os.path.join(ROOT, ".ci-cache", "npm", "node_modules", ".bin", "mcp-server-everything")
TIME_SERVER = os.path.join(ROOT, ".ci-cache", "mcp-time-venv", "bin", "mcp-server-time")
FAULT = os.path.join(ROOT, "tests", "mcp_fault_server.py")

need_everything = pytest.mark.skipif(not os.access(EVERYTHING, os.X_OK),
                                     reason="server-everything not installed: run .ci/install-mcp.sh")
need_time = pytest.mark.skipif(not os.access(TIME_SERVER, os.X_OK),
                               reason="mcp-server-time not installed: run .ci/install-mcp.sh")

EV_ENTRY = {"name": "everything", "command": EVERYTHING}


@pytest.fixture
def start(engine):
    """start(servers, **cfg): an engine with these MCP servers (closed by the shared factory)."""
    return lambda servers, **cfg: engine({"mcp_servers": servers, **cfg})


def server_state(eng, name, state, start=0, timeout=30.0):
    """Wait for an mcp_servers event where ``name`` is in ``state``; returns that entry."""
    def pred(e):
        return e.get("type") == "mcp_servers" and any(
            s["name"] == name and s["state"] == state for s in e["servers"])
    ev = eng.wait_for(pred, timeout, start, what=f"{name} {state}")
    return next(s for s in ev["servers"] if s["name"] == name)


def tool_outputs(eng, mark):
    return [e for e in eng.since(mark, "tool_output")]


def run_turn(eng, content, timeout=20.0):
    m = eng.send({"op": "user_message", "content": content})
    eng.wait_status("ready", start=m, timeout=timeout)
    return m


def last_user_text(body):
    for item in reversed(body["input"]):
        if item.get("role") == "user":
            return "".join(p.get("text", "") for p in item["content"])
    return ""


@need_everything
def test_tool_call_turn_prompt_and_resource(start, server):
    eng = start([EV_ENTRY], approval_mode="full-access")
    first = next(e for e in eng.events if e.get("type") == "mcp_servers")
    assert first["servers"] == [{"name": "everything", "transport": "stdio", "state": "connecting",
                                 "tools": []}]
    entry = server_state(eng, "everything", "connected")
    assert "echo" in {t["name"] for t in entry["tools"]}
    eng.wait_for(lambda e: e.get("type") == "info"
                 and e["message"].startswith("MCP server everything connected ("))
    # command_list is re-emitted with the prompts (marker MCP)
    cl = eng.wait_for(lambda e: e.get("type") == "command_list" and any(
        c["marker"] == "MCP" for c in e["commands"]))
    rows = {c["command"]: c for c in cl["commands"]}
    assert rows["/mcp__everything__args-prompt"]["args"] == "<JSON: city>"
    assert rows["/mcp"]["marker"] is None

    # 1. the model calls a server-everything tool; the next request carries its result
    server.script({"tool_calls": [{"name": "mcp__everything__echo", "arguments": {"message": "hello"},
                                   "call_id": "c1"}]}, {"text": "done"})
    m = run_turn(eng, "echo something")
    outs = tool_outputs(eng, m)
    assert outs == [{"type": "tool_output", "call_id": "c1", "name": "mcp__everything__echo",
                     "output": "Echo: hello", "is_error": False, "session": outs[0]["session"]}]
    first_req, second_req = server.requests[-2]["body"], server.requests[-1]["body"]
    tools = {t.get("name"): t for t in first_req["tools"]}
    assert tools["mcp__everything__echo"]["parameters"]["type"] == "object"
    assert "message" in tools["mcp__everything__echo"]["parameters"]["properties"]
    assert "mcp__everything__read_resource" in tools
    result = [i for i in second_req["input"] if i.get("type") == "function_call_output"]
    assert result[-1] == {"type": "function_call_output", "call_id": "c1", "output": "Echo: hello"}

    # an isError result is an error output with the rendered text
    server.script({"tool_calls": [{"name": "mcp__everything__get-sum", "arguments": {"a": "x"},
                                   "call_id": "c2"}]}, {"text": "ok"})
    m = run_turn(eng, "bad sum")
    out = tool_outputs(eng, m)[0]
    assert out["is_error"] is True and "Invalid arguments for tool get-sum" in out["output"]

    # 2. a prompt command expands into the user message sent to the model
    server.script({"text": "It is sunny."})
    typed = '/mcp__everything__args-prompt {"city": "Paris"}'
    m = eng.send({"op": "command", "input": typed})
    eng.wait_status("ready", start=m, timeout=20)
    echo = eng.since(m, "user_message")
    assert [e["content"] for e in echo] == [typed]
    sent = last_user_text(server.requests[-1]["body"])
    assert sent.startswith("user:\n") and "Paris" in sent and typed not in sent

    # while a turn runs, the expanded prompt command is queued like any message
    server.script({"text": "slow answer", "stall": 1.0}, {"text": "weather later"})
    m = eng.send({"op": "user_message", "content": "first"})
    eng.wait_for("assistant_delta", start=m)
    typed2 = '/mcp__everything__args-prompt {"city": "Oslo"}'
    eng.send({"op": "command", "input": typed2})
    pend = eng.wait_for(lambda e: e.get("type") == "pending_messages" and e["messages"], start=m)
    assert pend["messages"] == [typed2]
    eng.wait_for(lambda e: e.get("type") == "user_message" and e["content"] == typed2, start=m,
                 timeout=20)
    eng.wait_status("ready", start=m, timeout=20)
    assert "Oslo" in last_user_text(server.requests[-1]["body"])

    # a missing required argument is an error, nothing is sent
    n = len(server.requests)
    m = eng.send({"op": "command", "input": "/mcp__everything__args-prompt"})
    err = eng.wait_for("error", start=m)
    assert "missing required prompt arguments: city" in err["message"]
    assert len(server.requests) == n

    # 3. a resource read through the synthetic tools
    uri = "demo://resource/static/document/architecture.md"
    server.script({"tool_calls": [{"name": "mcp__everything__list_resources", "arguments": {},
                                   "call_id": "l1"}]},
                  {"tool_calls": [{"name": "mcp__everything__read_resource", "arguments": {"uri": uri},
                                   "call_id": "r1"}]},
                  {"text": "read it"})
    m = run_turn(eng, "read the architecture doc")
    listed, read = tool_outputs(eng, m)
    assert uri in {r["uri"] for r in json.loads(listed["output"])["resources"]}
    body = json.loads(read["output"])
    assert read["is_error"] is False and body["uri"] == uri
    assert body["text"].startswith("# Everything Server")
    final = [i for i in server.requests[-1]["body"]["input"] if i.get("type") == "function_call_output"]
    assert "# Everything Server" in final[-1]["output"]


@need_everything
def test_plan_mode_runs_read_only_tools_only(start, server):
    eng = start([EV_ENTRY], approval_mode="plan")
    server_state(eng, "everything", "connected")
    server.script({"tool_calls": [{"name": "mcp__everything__toggle-simulated-logging", "arguments": {},
                                   "call_id": "w1"},
                                  {"name": "mcp__everything__echo", "arguments": {"message": "ro"},
                                   "call_id": "r1"}]},
                  {"text": "planned"})
    m = eng.send({"op": "user_message", "content": "plan"})
    # the readOnlyHint tool is let through plan mode and asks (upstream table: plan = ask)
    req = eng.wait_for("approval_request", start=m)
    assert req["call_id"] == "r1" and req["name"] == "mcp__everything__echo"
    eng.send({"op": "approve", "call_id": "r1", "decision": "allow"})
    eng.wait_status("ready", start=m, timeout=20)
    outs = {o["call_id"]: o for o in tool_outputs(eng, m)}
    assert outs["r1"]["output"] == "Echo: ro" and not outs["r1"]["is_error"]
    assert outs["w1"]["is_error"] and "plan mode" in outs["w1"]["output"]
    assert len(eng.since(m, "approval_request")) == 1

    # auto-edit: readOnlyHint tools skip approval
    eng.send({"op": "set_approval_mode", "mode": "auto-edit"})
    server.script({"tool_calls": [{"name": "mcp__everything__echo", "arguments": {"message": "x"},
                                   "call_id": "r2"}]}, {"text": "ok"})
    m = run_turn(eng, "again")
    assert not eng.since(m, "approval_request")
    assert tool_outputs(eng, m)[0]["output"] == "Echo: x"


@pytest.mark.slow
@need_time
def test_mcp_ops_live_set_toggle_remove(start, server, tmp_path):
    eng = start([], approval_mode="full-access", some_unknown_key={"kept": True})
    cfg_path = eng.profile / "config.json"

    # validation errors, with upstream's texts
    for op, msg in [({"op": "mcp_set"}, "mcp_set requires a server object"),
                    ({"op": "mcp_set", "server": {"name": "bad name", "command": "x"}},
                     "invalid MCP server name 'bad name': use letters, digits, '_' or '-'"),
                    ({"op": "mcp_remove"}, "mcp_remove requires name"),
                    ({"op": "mcp_remove", "name": "nope"}, "unknown MCP server: nope"),
                    ({"op": "mcp_toggle", "name": "x"}, "mcp_toggle requires name and enabled"),
                    ({"op": "mcp_toggle", "name": "nope", "enabled": True}, "unknown MCP server: nope")]:
        m = eng.send(op)
        assert eng.wait_for("error", start=m)["message"] == msg

    # mcp_set adds the time server while the engine runs; its tools appear without restart
    entry = {"name": "time", "command": TIME_SERVER, "args": ["--local-timezone", "UTC"],
             "custom_field": 7}
    m = eng.send({"op": "mcp_set", "server": entry})
    view = eng.wait_for("mcp_servers", start=m)
    assert view["servers"][0]["name"] == "time" and view["servers"][0]["state"] == "connecting"
    got = server_state(eng, "time", "connected", start=m)
    assert {t["name"] for t in got["tools"]} == {"get_current_time", "convert_time"}
    saved = json.loads(cfg_path.read_text())
    assert saved["some_unknown_key"] == {"kept": True}
    assert saved["mcp_servers"][0]["name"] == "time" and saved["mcp_servers"][0]["custom_field"] == 7

    server.script({"tool_calls": [{"name": "mcp__time__get_current_time",
                                   "arguments": {"timezone": "Europe/Paris"}, "call_id": "t1"}]},
                  {"text": "it is late"})
    m = run_turn(eng, "what time is it in Paris")
    assert '"timezone": "Europe/Paris"' in tool_outputs(eng, m)[0]["output"]
    assert "mcp__time__get_current_time" in {t.get("name") for t in server.requests[-2]["body"]["tools"]}

    # toggle off: disabled, persisted, tools gone from the next request
    m = eng.send({"op": "mcp_toggle", "name": "time", "enabled": False})
    assert eng.wait_for("status", start=m)["message"] == "MCP server time disabled"
    assert server_state(eng, "time", "disabled", start=m)["tools"] == []
    assert json.loads(cfg_path.read_text())["mcp_servers"][0]["enabled"] is False
    server.script({"text": "no tools"})
    run_turn(eng, "hi")
    assert not any((t.get("name") or "").startswith("mcp__") for t in server.requests[-1]["body"]["tools"])

    # and on again: reconnects
    m = eng.send({"op": "mcp_toggle", "name": "time", "enabled": True})
    assert eng.wait_for("status", start=m)["message"] == "MCP server time enabled"
    server_state(eng, "time", "connected", start=m)
    assert json.loads(cfg_path.read_text())["mcp_servers"][0]["enabled"] is True

    # /mcp text forms
    m = eng.send({"op": "command", "input": "/mcp"})
    assert "time (stdio): connected, 2 tools" in eng.wait_for("info", start=m)["message"]
    m = eng.send({"op": "command", "input": "/mcp tools time"})
    assert "mcp__time__convert_time" in eng.wait_for("info", start=m)["message"]
    m = eng.send({"op": "command", "input": "/mcp disable time"})
    server_state(eng, "time", "disabled", start=m)
    m = eng.send({"op": "command", "input": "/mcp enable time"})
    server_state(eng, "time", "connected", start=m)
    m = eng.send({"op": "command", "input": "/mcp bogus"})
    assert eng.wait_for("error", start=m)["message"] == "usage: /mcp [tools|reload|enable|disable] [server]"
    m = eng.send({"op": "mcp_list"})
    assert eng.wait_for("mcp_servers", start=m)["servers"][0]["state"] == "connected"
    m = eng.send({"op": "command", "input": "/doctor"})
    eng.wait_for(lambda e: e.get("type") == "info" and e["message"] == "mcp: 1 server (1 connected)",
                 start=m)

    # remove: gone from the view and from config.json
    m = eng.send({"op": "mcp_remove", "name": "time"})
    assert eng.wait_for("mcp_servers", start=m)["servers"] == []
    saved = json.loads(cfg_path.read_text())
    assert saved["mcp_servers"] == [] and saved["some_unknown_key"] == {"kept": True}


def test_config_save_failure_changes_nothing(tmp_path):
    """A config.json that failed to load is never overwritten: the op fails with upstream's
    text, and neither the manager nor the in-memory config changes."""
    from types import SimpleNamespace

    from jucode.config import Config
    from jucode.mcp.host import McpHost

    cfg = Config(path=tmp_path / "config.json", data={"mcp_servers": []}, load_error="bad json")
    emitted = []
    engine = SimpleNamespace(config=cfg, cwd=str(tmp_path), post=emitted.append,
                             emit=emitted.append)
    host = McpHost(engine)
    try:
        host.handle_op(engine, {"op": "mcp_set", "server": {"name": "x", "command": "true"}})
        assert emitted == [{"type": "error", "message":
                            "failed to save config: config.json is not valid JSON; "
                            "not overwriting it (bad json)"}]
        assert cfg.data == {"mcp_servers": []} and host.servers_view() == []
        assert not (tmp_path / "config.json").exists()
    finally:
        host.close()


from test_mcp_real import everything_http  # noqa: E402,F401  (fixture: server-everything over HTTP)


@need_everything
def test_streamable_http_server_through_the_engine(start, server, everything_http):  # noqa: F811
    eng = start([{"name": "web", "transport": "http", "url": everything_http}],
                approval_mode="full-access")
    assert server_state(eng, "web", "connected")["transport"] == "http"
    server.script({"tool_calls": [{"name": "mcp__web__get-sum", "arguments": {"a": 2, "b": 3},
                                   "call_id": "s1"}]}, {"text": "5"})
    m = run_turn(eng, "add")
    assert tool_outputs(eng, m)[0]["output"] == "The sum of 2 and 3 is 5."


def test_host_is_cheap_and_reports_invalid_entries(tmp_path):
    """Construction spawns nothing (servers show ``connecting`` until after_startup) and the
    skipped invalid entries are reported once in the startup batch."""
    from types import SimpleNamespace

    from jucode.config import Config
    from jucode.mcp.host import McpHost

    cfg = Config(path=tmp_path / "config.json", data={"mcp_servers": [
        {"name": "ok", "command": sys.executable, "args": [FAULT, "good"]},
        {"name": "bad name", "command": "x"},
        {"name": "off", "command": "x", "enabled": False}]})
    posted = []
    engine = SimpleNamespace(config=cfg, cwd=str(tmp_path), post=posted.append, emit=posted.append)
    host = McpHost(engine)
    try:
        assert [(s["name"], s["state"]) for s in host.servers_view()] == [
            ("ok", "connecting"), ("off", "disabled")]
        assert host.startup_events() == [{"type": "error", "message":
                                          "invalid MCP server name 'bad name': use letters, digits, '_' or '-'"}]
        assert host.manager._live == set() and posted == []
        assert host.doctor_lines() == ["mcp: 2 servers (1 connecting, 1 disabled)"]
    finally:
        host.close()
