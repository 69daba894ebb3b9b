"""The MCP manager against real servers: server-everything (stdio and streamable HTTP on
127.0.0.1) and mcp-server-time. Both are installed by .ci/install-mcp.sh into .ci-cache/.
"""

import os
import signal
import socket
import subprocess
import threading
import time

import pytest

from harness import Inbox
from jucode.mcp import McpManager
from jucode.tools.base import ToolContext

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EVERYTHING = os.path.join(ROOT, ".ci-cache", "npm", "node_modules", ".bin", "mcp-server-everything")
TIME_SERVER = os.path.join(ROOT, ".ci-cache", "mcp-time-venv", "bin", "mcp-server-time")

need_everything = pytest.mark.skipif(
    not os.access(EVERYTHING, os.X_OK),
    reason="server-everything not installed: run .ci/install-mcp.sh")
need_time = pytest.mark.skipif(
    not os.access(TIME_SERVER, os.X_OK),
    reason="mcp-server-time not installed: run .ci/install-mcp.sh")


def ctx(cwd):
    return ToolContext(cwd=cwd, interrupt=threading.Event())


def check_everything(mgr, name, cwd):
    """What both transports must do with server-everything."""
    view = next(v for v in mgr.servers_view() if v["name"] == name)
    assert view["state"] == "connected"
    tool_names = {t["name"] for t in view["tools"]}
    assert {"echo", "get-sum", "get-tiny-image"} <= tool_names
    specs = {s.name: s for s in mgr.tool_specs()}
    assert f"mcp__{name}__echo" in specs and specs[f"mcp__{name}__echo"].parameters["type"] == "object"
    c = ctx(cwd)
    assert mgr.run_tool(f"mcp__{name}__echo", {"message": "hello"}, c) == {"output": "Echo: hello"}
    assert mgr.run_tool(f"mcp__{name}__get-sum", {"a": 2, "b": 3}, c) == {
        "output": "The sum of 2 and 3 is 5."}
    image = mgr.run_tool(f"mcp__{name}__get-tiny-image", {}, c)["output"]
    assert "[image image/png (" in image and "base64 bytes, not shown)]" in image
    # the TS SDK reports bad arguments as an isError result
    assert "error" in mgr.run_tool(f"mcp__{name}__get-sum", {"a": "x"}, c)
    # prompts
    rows = {r["command"]: r for r in mgr.prompt_commands()}
    assert rows[f"/mcp__{name}__simple-prompt"]["args"] == ""
    assert rows[f"/mcp__{name}__args-prompt"]["args"] == "<JSON: city>"
    text = mgr.expand_prompt(f"/mcp__{name}__args-prompt", '{"city": "Paris"}')
    assert text.startswith("user:\n") and "Paris" in text
    # resources
    listed = mgr.run_tool(f"mcp__{name}__list_resources", {}, c)["resources"]
    text_res = next(r for r in listed if r["mimeType"].startswith("text/"))
    got = mgr.run_tool(f"mcp__{name}__read_resource", {"uri": text_res["uri"]}, c)
    assert got["uri"] == text_res["uri"] and got["text"]


@need_everything
def test_everything_over_stdio(tmp_path):
    inbox = Inbox()
    mgr = McpManager([{"name": "ev", "command": EVERYTHING}], str(tmp_path), inbox)
    try:
        assert inbox.wait_info("MCP server ev ").startswith("MCP server ev connected (")
        check_everything(mgr, "ev", str(tmp_path))
        # server -> client roots/list
        roots = mgr.run_tool("mcp__ev__get-roots-list", {}, ctx(str(tmp_path)))
        assert f"file://{tmp_path}" in roots["output"]
    finally:
        mgr.close()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def everything_http(tmp_path):
    """server-everything in streamableHttp mode on a free port; only 127.0.0.1 is used."""
    port = free_port()
    log = open(tmp_path / "everything-http.log", "wb")
    proc = subprocess.Popen([EVERYTHING, "streamableHttp"], env={**os.environ, "PORT": str(port)},
                            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                            start_new_session=True, cwd=str(tmp_path))
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError((tmp_path / "everything-http.log").read_text())
                threading.Event().wait(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(5)
        log.close()


@need_everything
def test_everything_over_streamable_http(tmp_path, everything_http):
    inbox = Inbox()
    mgr = McpManager([{"name": "evh", "transport": "http", "url": everything_http,
                       "headers": {"X-Test": "1"}}], str(tmp_path), inbox)
    try:
        assert inbox.wait_info("MCP server evh ").startswith("MCP server evh connected (")
        client = mgr._slots["evh"].client
        assert client.transport.session_id                 # echoed mcp-session-id
        assert client.transport.protocol_version == "2025-06-18"
        check_everything(mgr, "evh", str(tmp_path))
    finally:
        mgr.close()


@need_everything
def test_http_server_not_listening_fails_readably(tmp_path):
    inbox = Inbox()
    url = f"http://127.0.0.1:{free_port()}/mcp"
    mgr = McpManager([{"name": "down", "transport": "http", "url": url, "timeout_seconds": 5}],
                     str(tmp_path), inbox)
    try:
        msg = inbox.wait_info("MCP server down ")
        assert msg.startswith("MCP server down failed to connect: HTTP request failed: ")
        assert mgr.run_tool("mcp__down__x", {}, ctx(str(tmp_path))) == {
            "error": "MCP server down is failed"}
    finally:
        mgr.close()


@need_time
def test_time_server(tmp_path):
    inbox = Inbox()
    mgr = McpManager([{"name": "time", "command": TIME_SERVER, "args": ["--local-timezone", "UTC"]}],
                     str(tmp_path), inbox)
    try:
        assert inbox.wait_info("MCP server time ") == "MCP server time connected (2 tools)"
        c = ctx(str(tmp_path))
        out = mgr.run_tool("mcp__time__get_current_time", {"timezone": "Europe/Paris"}, c)
        assert '"timezone": "Europe/Paris"' in out["output"]
        bad = mgr.run_tool("mcp__time__get_current_time", {"timezone": "Mars/Olympus"}, c)
        assert "Invalid timezone" in bad["error"]
        assert mgr.run_tool("mcp__time__nope", {}, c) == {"error": "unknown MCP tool: mcp__time__nope"}
        assert "mcp__time__get_current_time" in mgr.read_only_tools()
    finally:
        mgr.close()
