"""MCP faults through the real engine (issue 8): crashing, hanging and garbage-printing
servers end up ``failed`` while the engine and the other servers keep working; calls to a
dead server fail fast; ``reload`` brings a fixed server back; slow servers never delay the
startup batch; no MCP child (nor its grandchildren) outlives the engine.
"""

import os
import statistics
import sys
import time

import pytest

from harness import pid_alive, read_pid_file
from test_mcp_engine import EVERYTHING, FAULT, need_everything, server_state, tool_outputs

PY = sys.executable


def fault(name, mode, tmp_path, **extra):
    return {"name": name, "command": PY,
            "args": [FAULT, mode, "--pid-file", str(tmp_path / "pids.txt")], **extra}


def descendants(root):
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def wait_gone(pids, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = [p for p in pids if pid_alive(p)]
        if not left:
            return []
        time.sleep(0.05)
    return [p for p in pids if pid_alive(p)]


def read_pids(tmp_path, count, timeout=10.0):
    return read_pid_file(tmp_path / "pids.txt", count, timeout)


def test_faulty_servers_fail_readably_and_others_keep_working(engine, tmp_path, server):
    mode_file = tmp_path / "mode.txt"
    mode_file.write_text("crash")
    servers = [
        {"name": "fixme", "command": PY, "args": [FAULT, "--mode-file", str(mode_file)]},
        fault("garbage", "garbage", tmp_path, timeout_seconds=2),
        fault("hang", "hang", tmp_path, timeout_seconds=1),
        fault("fx", "good", tmp_path),
    ]
    eng = engine({"mcp_servers": servers, "approval_mode": "full-access"}, wait=False)
    try:
        eng.wait_startup()
        crash = server_state(eng, "fixme", "failed")
        assert "boom: missing configuration" in crash["error"]
        assert "stdout was not JSON-RPC" in server_state(eng, "garbage", "failed")["error"]
        assert "initialize timed out after 1s" in server_state(eng, "hang", "failed")["error"]
        server_state(eng, "fx", "connected")
        for name in ("fixme", "garbage", "hang"):
            eng.wait_for(lambda e, n=name: e.get("type") == "info"
                         and e["message"].startswith(f"MCP server {n} failed to connect: "))

        # the good server works; then it dies mid-call; later calls to it fail fast
        server.script(
            {"tool_calls": [{"name": "mcp__fx__echo", "arguments": {"text": "a"}, "call_id": "e1"}]},
            {"tool_calls": [{"name": "mcp__fx__die", "arguments": {}, "call_id": "d1"}]},
            {"tool_calls": [{"name": "mcp__fx__echo", "arguments": {}, "call_id": "e2"}]},
            {"text": "survived"})
        m = eng.send({"op": "user_message", "content": "go"})
        eng.wait_status("ready", start=m, timeout=20)
        outs = {o["call_id"]: o for o in tool_outputs(eng, m)}
        assert outs["e1"] == dict(outs["e1"], output='echo: {"text": "a"}', is_error=False)
        assert outs["d1"]["is_error"] and "fatal: died during a call" in outs["d1"]["output"]
        assert outs["e2"] == dict(outs["e2"], output='{"error":"MCP server fx is failed"}',
                                  is_error=True)
        assert "server exited with code 4" in server_state(eng, "fx", "failed", start=m)["error"]
        assert not eng.since(m, "error")

        # the engine keeps answering, and reload brings the fixed server back
        mode_file.write_text("good")
        m = eng.send({"op": "command", "input": "/mcp reload fixme"})
        assert eng.wait_for("status", start=m)["message"] == "reconnecting MCP server fixme"
        assert {"echo", "fail"} <= {t["name"] for t in server_state(eng, "fixme", "connected",
                                                                    start=m)["tools"]}
        m = eng.send({"op": "command", "input": "/mcp reload nope"})
        assert eng.wait_for("error", start=m)["message"] == "unknown MCP server: nope"
    finally:
        eng.close()
    assert eng.proc.returncode == 0


def startup_seconds(engine, tmp_path, servers, tag):
    """Spawn → the startup batch's mcp_servers, in seconds."""
    t0 = time.monotonic()
    eng = engine({"mcp_servers": servers}, tmp=tmp_path / tag, server=None, wait=False)
    try:
        ev = eng.wait_startup()
        took = time.monotonic() - t0
        return took, ev
    finally:
        eng.close()


@pytest.mark.slow
def test_startup_not_delayed_by_slow_servers(engine, tmp_path):
    slow = [fault(f"slow{i}", "hang", tmp_path) for i in range(3)]
    without, with_slow = [], []
    for i in range(3):
        without.append(startup_seconds(engine, tmp_path, [], f"a{i}")[0])
        took, ev = startup_seconds(engine, tmp_path, slow, f"b{i}")
        with_slow.append(took)
        assert [s["state"] for s in ev["servers"]] == ["connecting"] * 3
    base, slowed = statistics.median(without), statistics.median(with_slow)
    assert slowed < base * 1.5 + 0.5, (without, with_slow)


def test_no_child_outlives_shutdown(engine, tmp_path, server):
    servers = [fault("a", "good", tmp_path), fault("stub", "stubborn", tmp_path),
               fault("h", "hang", tmp_path)]
    eng = engine({"mcp_servers": servers}, wait=False)
    try:
        eng.wait_startup()
        server_state(eng, "stub", "connected")
        pids = read_pids(tmp_path, 4)                     # 3 servers + the stubborn grandchild
        assert all(pid_alive(p) for p in pids)
        t0 = time.monotonic()
        eng.send({"op": "shutdown"})
        assert eng.wait_exit(10) == 0
        assert time.monotonic() - t0 < 5
    finally:
        eng.close()
    assert wait_gone(pids) == []


@need_everything
def test_no_child_outlives_stdin_eof(engine, tmp_path, server):
    servers = [{"name": "everything", "command": EVERYTHING}, fault("stub", "stubborn", tmp_path)]
    eng = engine({"mcp_servers": servers}, wait=False)
    try:
        eng.wait_startup()
        server_state(eng, "everything", "connected")
        server_state(eng, "stub", "connected")
        kids = descendants(eng.proc.pid) + read_pids(tmp_path, 2)
        assert len(set(kids)) >= 3
        eng.close_stdin()
        assert eng.wait_exit(10) == 0
    finally:
        eng.close()
    assert wait_gone(kids) == []
