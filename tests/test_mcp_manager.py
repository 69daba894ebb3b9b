"""McpManager and McpClient against the scripted stdio server tests/mcp_fault_server.py.

Covers the normal paths (pagination, tool calls and result rendering, prompts, resources,
server->client requests, list_changed) and every fault: crash, hang, garbage, death during
a call, a call that times out; reload of a fixed server; fast construction; close() kills
every child, including a stubborn one and its grandchild.
"""

import os
import sys
import threading
import time

import pytest

from harness import Inbox, pid_alive
from jucode.mcp import CHANGED_MARKER, McpError, McpManager
from jucode.tools.base import GATE_MCP, ToolContext

SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mcp_fault_server.py")


def entry(name, mode="good", timeout=5, **extra):
    return {"name": name, "command": sys.executable, "args": [SERVER, mode, *extra.pop("more", [])],
            "timeout_seconds": timeout, **extra}


def wait_state(mgr, inbox, name, states, timeout=10.0):
    states = (states,) if isinstance(states, str) else states

    def settled(_ev):
        return mgr.state_of(name) in states
    if not settled(None):
        inbox.wait_for(lambda ev: ev["type"] == "mcp_servers" and settled(ev), timeout)
    return mgr.state_of(name)


def wait_dead(pids, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(pid_alive(p) for p in pids):
            return True
        threading.Event().wait(0.02)
    return False


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "inside.txt").write_text("inside text\n")
    return str(tmp_path)


@pytest.fixture
def good(workspace):
    inbox = Inbox()
    mgr = McpManager([entry("fx")], workspace, inbox)
    assert wait_state(mgr, inbox, "fx", "connected") == "connected"
    yield mgr, inbox, workspace
    mgr.close()


def ctx(cwd):
    return ToolContext(cwd=cwd, interrupt=threading.Event())


def test_connect_lists_tools_across_pages_and_emits_views(good):
    mgr, inbox, cwd = good
    assert "MCP server fx connected (10 tools)" in inbox.infos()
    inbox.wait_for(lambda ev: ev["type"] == CHANGED_MARKER)
    view = mgr.servers_view()
    assert view[0]["name"] == "fx" and view[0]["transport"] == "stdio"
    assert view[0]["state"] == "connected" and "error" not in view[0]
    assert {"name": "echo", "description": "Echo the text back"} in view[0]["tools"]
    specs = {s.name: s for s in mgr.tool_specs()}
    assert "mcp__fx__die" in specs                          # from the second page
    assert "mcp__fx__list_resources" in specs and "mcp__fx__read_resource" in specs
    assert all(s.gate == GATE_MCP for s in specs.values())
    assert specs["mcp__fx__echo"].read_only_hint and not specs["mcp__fx__fail"].read_only_hint
    assert specs["mcp__fx__slow"].parameters == {"type": "object"}
    assert "mcp__fx__echo" in mgr.read_only_tools()
    assert mgr.summary() == "mcp: 1 server (1 connected)"


def test_tool_calls_render_results(good):
    mgr, _inbox, cwd = good
    c = ctx(cwd)
    assert mgr.run_tool("mcp__fx__echo", {"text": "hi"}, c) == {"output": 'echo: {"text": "hi"}'}
    assert mgr.run_tool("mcp__fx__echo", None, c) == {"output": "echo: {}"}
    assert mgr.run_tool("mcp__fx__fail", {}, c) == {"error": "it failed"}
    assert mgr.run_tool("mcp__fx__image", {}, c) == {"output": (
        "[image image/png (8 base64 bytes, not shown)]\n[resource link mem://hello]\n"
        "[resource mem://x]\ninline")}
    assert mgr.run_tool("mcp__fx__structured", {}, c) == {"output": '{"a": 1}'}
    assert mgr.run_tool("mcp__fx__empty", {}, c) == {"output": "(no content)"}
    assert mgr.run_tool("mcp__fx__nope", {}, c) == {"error": "unknown MCP tool: mcp__fx__nope"}
    assert mgr.run_tool("mcp__other__x", {}, c) == {"error": "unknown MCP tool: mcp__other__x"}
    assert mgr.run_tool("mcp__fx__echo", [1], c) == {"error": "MCP tool arguments must be a JSON object"}
    # the spec's run callable goes through the same path
    spec = next(s for s in mgr.tool_specs() if s.name == "mcp__fx__echo")
    assert spec.run({"text": "x"}, c) == {"output": 'echo: {"text": "x"}'}


def test_server_to_client_requests(good):
    mgr, _inbox, cwd = good
    roots = mgr.run_tool("mcp__fx__roots", {}, ctx(cwd))["output"]
    assert '"name": "workspace"' in roots and f'"file://{cwd}"' in roots
    err = mgr.run_tool("mcp__fx__ask_unknown", {}, ctx(cwd))["output"]
    assert '"code": -32601' in err


def test_list_changed_refreshes_tools(good):
    mgr, inbox, cwd = good
    start = len(inbox.events)
    assert mgr.run_tool("mcp__fx__add_tool", {}, ctx(cwd)) == {"output": "added"}
    inbox.wait_for(lambda ev: ev["type"] == "mcp_servers" and inbox.events.index(ev) >= start
                   and any(t["name"] == "added" for t in ev["servers"][0]["tools"]))
    assert "mcp__fx__added" in {s.name for s in mgr.tool_specs()}
    assert mgr.run_tool("mcp__fx__added", {}, ctx(cwd)) == {"output": "the added tool ran"}


def test_prompts(good):
    mgr, _inbox, _cwd = good
    rows = {r["command"]: r for r in mgr.prompt_commands()}
    assert rows["/mcp__fx__greet"] == {"command": "/mcp__fx__greet", "marker": "MCP",
                                       "args": "<JSON: who>", "description": "Greets someone"}
    assert rows["/mcp__fx__plain"]["args"] == ""
    assert rows["/mcp__fx__optional"]["args"] == "[JSON arguments]"
    assert mgr.expand_prompt("/mcp__fx__greet", '{"who": "Ada"}') == (
        "user:\nSay hello to Ada\n\nassistant:\nHello!")
    assert mgr.expand_prompt("/mcp__fx__plain", "") == "user:\nplain prompt {}"
    assert mgr.expand_prompt("mcp__fx__optional", '{"topic": 3}') == 'user:\nplain prompt {"topic": "3"}'
    with pytest.raises(McpError, match="missing required prompt arguments: who"):
        mgr.expand_prompt("/mcp__fx__greet", "")
    with pytest.raises(McpError, match="must be a JSON object"):
        mgr.expand_prompt("/mcp__fx__greet", "[1]")
    with pytest.raises(McpError, match="unknown MCP prompt: /mcp__fx__nope"):
        mgr.expand_prompt("/mcp__fx__nope", "")


def test_resources(good):
    mgr, _inbox, cwd = good
    c = ctx(cwd)
    listed = mgr.run_tool("mcp__fx__list_resources", {}, c)["resources"]
    assert {"uri": "mem://hello", "name": "hello", "description": "a greeting",
            "mimeType": "text/plain"} in listed
    inside = "file://" + os.path.join(cwd, "inside.txt")
    assert mgr.run_tool("mcp__fx__read_resource", {"uri": inside}, c) == {
        "uri": inside, "mimeType": "text/plain", "text": "inside text\n"}
    assert mgr.run_tool("mcp__fx__read_resource", {"uri": "mem://hello"}, c)["text"] == "hello resource"
    out = mgr.run_tool("mcp__fx__read_resource", {"uri": "file:///etc/hostname"}, c)
    assert out == {"error": "resource file:///etc/hostname is outside the workspace"}
    assert "is not listed" in mgr.run_tool("mcp__fx__read_resource", {"uri": "mem://zzz"}, c)["error"]
    assert "too large" in mgr.run_tool("mcp__fx__read_resource", {"uri": "mem://big"}, c)["error"]
    assert "is not text" in mgr.run_tool("mcp__fx__read_resource", {"uri": "mem://bin"}, c)["error"]
    assert mgr.run_tool("mcp__fx__read_resource", {}, c) == {"error": "missing uri"}


def test_call_timeout_and_interrupt(workspace):
    inbox = Inbox()
    mgr = McpManager([entry("sl", timeout=1)], workspace, inbox)
    try:
        wait_state(mgr, inbox, "sl", "connected")
        t0 = time.monotonic()
        assert mgr.run_tool("mcp__sl__slow", {}, ctx(workspace)) == {
            "error": "tools/call timed out after 1s"}
        assert time.monotonic() - t0 < 3
        c = ctx(workspace)
        threading.Timer(0.2, c.interrupt.set).start()
        assert mgr.run_tool("mcp__sl__slow", {}, c) == {"error": "interrupted"}
        # the server is busy sleeping but the connection is still considered up
        assert mgr.state_of("sl") == "connected"
    finally:
        mgr.close()


@pytest.mark.parametrize("mode,expected", [
    ("crash", "failed to connect: server exited with code 3: boom: missing configuration"),
    ("hang", "failed to connect: initialize timed out after 1s "
             "(stderr: fault server starting in mode hang)"),
    ("garbage", "failed to connect: initialize timed out after 1s "
                "(stdout was not JSON-RPC: this is not json at all)"),
])
def test_connect_faults_end_failed_and_others_keep_working(workspace, mode, expected):
    inbox = Inbox()
    mgr = McpManager([entry("bad", mode, timeout=1), entry("ok")], workspace, inbox)
    try:
        assert wait_state(mgr, inbox, "bad", "failed") == "failed"
        assert f"MCP server bad {expected}" in inbox.infos()
        view = {v["name"]: v for v in mgr.servers_view()}
        assert view["bad"]["error"] == expected.split("failed to connect: ", 1)[1]
        t0 = time.monotonic()
        assert mgr.run_tool("mcp__bad__x", {}, ctx(workspace)) == {"error": "MCP server bad is failed"}
        assert time.monotonic() - t0 < 0.5   # answered at once, not after the 1 s timeout
        wait_state(mgr, inbox, "ok", "connected")
        assert mgr.run_tool("mcp__ok__echo", {}, ctx(workspace)) == {"output": "echo: {}"}
    finally:
        mgr.close()


def test_missing_command_fails_readably(workspace):
    inbox = Inbox()
    mgr = McpManager([{"name": "nx", "command": "/nonexistent/mcp-server"}], workspace, inbox)
    try:
        wait_state(mgr, inbox, "nx", "failed")
        assert mgr.servers_view()[0]["error"].startswith(
            "failed to start /nonexistent/mcp-server: No such file or directory")
    finally:
        mgr.close()


def test_death_during_call_then_reload_of_fixed_server(workspace, tmp_path):
    mode_file = tmp_path / "mode"
    mode_file.write_text("crash")
    inbox = Inbox()
    mgr = McpManager([entry("rl", "--mode-file", timeout=2, more=[str(mode_file)])], workspace, inbox)
    try:
        assert wait_state(mgr, inbox, "rl", "failed") == "failed"
        mode_file.write_text("good")
        assert mgr.reload("rl") == ["rl"]
        assert mgr.state_of("rl") == "connecting"
        assert wait_state(mgr, inbox, "rl", "connected") == "connected"
        # now the server dies in the middle of a call
        out = mgr.run_tool("mcp__rl__die", {}, ctx(workspace))
        assert out["error"].startswith("server exited with code 4")
        assert wait_state(mgr, inbox, "rl", "failed") == "failed"
        inbox.wait_for(lambda ev: ev["type"] == "info" and ev["message"].startswith(
            "MCP server rl failed: server exited with code 4: fatal: died during a call"))
        assert mgr.run_tool("mcp__rl__echo", {}, ctx(workspace)) == {"error": "MCP server rl is failed"}
        with pytest.raises(McpError, match="unknown MCP server: zz"):
            mgr.reload("zz")
    finally:
        mgr.close()


def test_construction_is_fast_and_close_kills_every_child(workspace, tmp_path):
    pid_file = tmp_path / "pids"
    servers = [entry(f"slow{i}", "hang", timeout=30, more=["--pid-file", str(pid_file)])
               for i in range(3)]
    servers.append(entry("stub", "stubborn", more=["--pid-file", str(pid_file)]))
    servers.append({**entry("off"), "enabled": False})
    inbox = Inbox()
    t0 = time.monotonic()
    mgr = McpManager(servers, workspace, inbox)
    elapsed = time.monotonic() - t0
    assert elapsed < 0.5, elapsed   # nothing waits for the 30 s handshakes
    states = {v["name"]: v["state"] for v in mgr.servers_view()}
    assert states == {"slow0": "connecting", "slow1": "connecting", "slow2": "connecting",
                      "stub": "connecting", "off": "disabled"}
    wait_state(mgr, inbox, "stub", "connected")
    deadline = time.monotonic() + 10
    while len(pid_file.read_text().split()) < 5 and time.monotonic() < deadline:
        threading.Event().wait(0.02)
    pids = [int(p) for p in pid_file.read_text().split()]
    assert len(pids) == 5 and all(pid_alive(p) for p in pids)
    t0 = time.monotonic()
    mgr.close()
    assert time.monotonic() - t0 < 5
    assert wait_dead(pids), [p for p in pids if pid_alive(p)]


def test_toggle_set_remove_and_handle_op(workspace, tmp_path):
    saved = []
    inbox = Inbox()
    pid_file = tmp_path / "pids"
    config = {"mcp_servers": [entry("a", more=["--pid-file", str(pid_file)])], "model": "m"}
    mgr = McpManager(config["mcp_servers"], workspace, inbox)
    try:
        wait_state(mgr, inbox, "a", "connected")
        first_pid = int(pid_file.read_text().split()[0])
        evs = mgr.handle_op({"op": "mcp_toggle", "name": "a", "enabled": False}, config, saved.append)
        assert evs[0] == {"type": "status", "message": "MCP server a disabled"}
        assert evs[1]["type"] == "mcp_servers" and evs[1]["servers"][0]["state"] == "disabled"
        assert saved[-1]["mcp_servers"][0]["enabled"] is False and saved[-1]["model"] == "m"
        assert mgr.run_tool("mcp__a__echo", {}, ctx(workspace)) == {"error": "MCP server a is disabled"}
        assert wait_dead([first_pid])                   # disabling stops the child
        config = saved[-1]
        mgr.handle_op({"op": "mcp_toggle", "name": "a", "enabled": True}, config, saved.append)
        assert wait_state(mgr, inbox, "a", "connected") == "connected"
        config = saved[-1]
        evs = mgr.handle_op({"op": "mcp_set", "server": entry("b")}, config, saved.append)
        assert [s["name"] for s in evs[-1]["servers"]] == ["a", "b"]
        assert wait_state(mgr, inbox, "b", "connected") == "connected"
        config = saved[-1]
        evs = mgr.handle_op({"op": "mcp_remove", "name": "a"}, config, saved.append)
        assert [s["name"] for s in evs[-1]["servers"]] == ["b"]
        assert mgr.run_tool("mcp__a__echo", {}, ctx(workspace)) == {"error": "unknown MCP tool: mcp__a__echo"}
        assert mgr.handle_op({"op": "mcp_remove", "name": "a"}, saved[-1], saved.append) == [
            {"type": "error", "message": "unknown MCP server: a"}]
        assert mgr.handle_op({"op": "mcp_list"}, saved[-1])[0]["servers"][0]["name"] == "b"

        def broken(_cfg):
            raise OSError("disk full")
        assert mgr.handle_op({"op": "mcp_remove", "name": "b"}, saved[-1], broken) == [
            {"type": "error", "message": "failed to save config: disk full"}]
        assert mgr.state_of("b") == "connected"
    finally:
        mgr.close()


def test_longest_server_name_wins(workspace):
    inbox = Inbox()
    mgr = McpManager([entry("a"), entry("a__b")], workspace, inbox)
    try:
        wait_state(mgr, inbox, "a", "connected")
        wait_state(mgr, inbox, "a__b", "connected")
        # "mcp__a__b__echo" is tool "echo" of server "a__b", not tool "b__echo" of "a"
        assert mgr.run_tool("mcp__a__b__echo", {"v": "1"}, ctx(workspace)) == {"output": 'echo: {"v": "1"}'}
    finally:
        mgr.close()


def test_mcp_slash_command(workspace):
    from jucode.mcp.slash import USAGE, mcp_slash_command

    inbox = Inbox()
    config = {"mcp_servers": [entry("a"), entry("b", "crash", timeout=2)]}
    mgr = McpManager(config["mcp_servers"], workspace, inbox)
    saved = []
    try:
        wait_state(mgr, inbox, "a", "connected")
        wait_state(mgr, inbox, "b", "failed")
        listing, view = mcp_slash_command(mgr, "", config)
        assert listing["message"].startswith("MCP servers:\n  a (stdio): connected, 10 tools\n"
                                             "  b (stdio): failed — server exited with code 3")
        assert view["type"] == "mcp_servers"
        tools = mcp_slash_command(mgr, "tools a", config)[0]["message"]
        assert "  mcp__a__echo — Echo the text back" in tools
        assert mcp_slash_command(mgr, "tools zz", config) == [
            {"type": "error", "message": "unknown MCP server: zz"}]
        assert mcp_slash_command(mgr, "reload b", config) == [
            {"type": "status", "message": "reconnecting MCP server b"}]
        evs = mcp_slash_command(mgr, "disable a", config, saved.append)
        assert evs[0] == {"type": "status", "message": "MCP server a disabled"}
        assert saved[-1]["mcp_servers"][0]["enabled"] is False
        assert mcp_slash_command(mgr, "bogus", config) == [{"type": "error", "message": USAGE}]
        assert mcp_slash_command(mgr, "enable", config) == [{"type": "error", "message": USAGE}]
    finally:
        mgr.close()


def test_missing_tool_error_names_the_server_state(tmp_path):
    from jucode.mcp import McpManager
    mgr = McpManager([{"name": "off", "command": "true", "enabled": False}], str(tmp_path),
                     lambda ev: None)
    try:
        assert mgr.missing_tool_error("mcp__off__x") == {"error": "MCP server off is disabled"}
        assert mgr.missing_tool_error("mcp__zz__x") == {"error": "unknown MCP tool: mcp__zz__x"}
    finally:
        mgr.close()
