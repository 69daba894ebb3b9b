"""Interactive shell sessions and malformed arguments through the real engine (issue 5)."""

from __future__ import annotations

import json

from harness import pid_alive, wait_until
from test_tools_e2e_support import (CONFIG, call, eng, fco, full_access, out_obj, outputs,  # noqa: F401
                                    run_calls, tool_names)


def test_exec_command_session_fed_by_write_stdin_and_killed_on_shutdown(engine, server):
    e = engine(CONFIG)
    try:
        full_access(e)
        m = run_calls(e, server, [call("exec_command", {"cmd": "echo $$ > cat.pid; exec cat",
                                                         "yield_time_ms": 300}, "x1")])
        started = out_obj(outputs(e, m)["x1"])
        assert started["running"] is True and isinstance(started["session_id"], int)
        assert started["note"] == ("command is still running; use write_stdin with this session_id to poll "
                                   "or send input")
        sid = started["session_id"]
        pid = int((e.cwd / "cat.pid").read_text())
        assert pid_alive(pid)
        # a later turn feeds the session
        m = run_calls(e, server, [call("write_stdin", {"session_id": sid, "text": "echo me please\n",
                                                       "yield_time_ms": 400}, "x2")])
        fed = outputs(e, m)["x2"]
        res = out_obj(fed)
        assert fed["is_error"] is False and res["running"] is True and res["session_id"] == sid
        assert "echo me please" in res["stdout"]
        # polling without text is not gated and returns the output so far
        e.send({"op": "set_approval_mode", "mode": "manual"})
        m = run_calls(e, server, [call("write_stdin", {"session_id": sid, "yield_time_ms": 50}, "x3")])
        assert not e.since(m, "approval_request")
        assert "echo me please" in out_obj(outputs(e, m)["x3"])["stdout"]
        assert json.loads(fco(server, "x3")["output"])["session_id"] == sid
    finally:
        e.close()
    assert e.proc.returncode == 0
    assert wait_until(lambda: not pid_alive(pid)), f"cat session {pid} survived engine shutdown"


def _bad_calls() -> list:
    """Malformed arguments for every builtin: not JSON, not an object, missing, wrong types, huge."""
    tools = ["read", "str_replace", "hashline_edit", "write", "apply_patch", "bash", "exec_command",
             "write_stdin", "ls", "ripgrep", "outline", "checkpoint", "web_fetch"]
    wrong = {"path": ["a"], "content": 5, "edits": "nope", "patch": 7, "command": {"x": 1}, "cmd": [1],
             "session_id": "abc", "pattern": None, "action": "zap", "url": 3, "offset": -4, "limit": "ten"}
    huge = {"read": {"path": "f.txt", "offset": 10 ** 30, "limit": 1e300},
            "str_replace": {"path": "f.txt", "edits": [{"oldText": "x" * 200_000, "newText": "y"}]},
            "hashline_edit": {"path": "f.txt", "edits": [{"op": "replace", "pos": "99999999999#ZZ", "lines": []}]},
            "write": {"path": "d/" * 3000 + "f.txt", "content": "x"},
            "apply_patch": {"patch": "not a patch " * 10_000},
            "bash": {"command": "true", "timeout": 1e300, "yield_time_ms": -1},
            "exec_command": {"cmd": "true", "timeout": "forever"},
            "write_stdin": {"session_id": 10 ** 40, "text": "x"},
            "ls": {"path": "f.txt", "limit": 10 ** 30},
            "ripgrep": {"pattern": "(" * 5000, "path": ".", "contextLines": 10 ** 12},
            "outline": {"path": "f.txt", "limit": -1},
            "checkpoint": {"action": "restore", "id": "x" * 100_000},
            "web_fetch": {"url": "http://127.0.0.1:1/" + "a" * 50_000, "max_bytes": 10 ** 30}}
    calls = []
    for t in tools:
        calls.append(call(t, "{not json", f"{t}-nojson"))
        calls.append(call(t, "[1, 2]", f"{t}-array"))
        if t != "ls":
            calls.append(call(t, {}, f"{t}-missing"))
            calls.append(call(t, wrong, f"{t}-wrong"))
        calls.append(call(t, huge[t], f"{t}-huge"))
    return calls


def test_malformed_arguments_for_every_tool_are_actionable_errors(eng, server):
    full_access(eng)
    (eng.cwd / "f.txt").write_text("hello\n")
    calls = _bad_calls()
    m = run_calls(eng, server, calls, timeout=60)
    outs = outputs(eng, m)
    assert list(outs) == [c["call_id"] for c in calls]
    offered = set(tool_names(server, -1))
    assert {c["name"] for c in calls} <= offered
    for cid, ev in outs.items():
        obj = out_obj(ev)
        if cid == "read-huge":       # a huge offset is valid: it just selects nothing
            assert ev["is_error"] is False and obj["lines_read"] == 0, obj
            continue
        assert ev["is_error"] is True, (cid, obj)
        msg = obj.get("error") or obj.get("stderr") or ""
        assert isinstance(msg, str) and msg.strip(), (cid, obj)
        assert "Traceback" not in ev["output"], (cid, msg)
        if not cid.startswith("web_fetch"):      # "fetch failed: <reason>" is web_fetch's own text
            assert " failed: " not in msg or msg.startswith("failed to "), (cid, msg)
        assert len(fco(server, cid)["output"].encode()) <= 16 * 1024
        if cid.endswith("-nojson"):
            assert msg.startswith("invalid JSON arguments: "), msg
        if cid.endswith("-array"):
            assert msg == "invalid JSON arguments: expected an object", msg
    assert out_obj(outs["read-missing"])["error"] == "missing path"
    assert out_obj(outs["bash-missing"])["error"] == ("missing command; use `command` for bash or `cmd` "
                                                      "for exec_command")
    assert out_obj(outs["write_stdin-missing"])["error"] == "missing session_id"
    assert out_obj(outs["read-wrong"])["error"] == "missing path"
    assert "must be a non-negative integer" in out_obj(outs["exec_command-huge"])["error"]
    # the engine keeps working
    server.script({"text": "still alive"})
    m2 = eng.send({"op": "user_message", "content": "ok?"})
    eng.wait_status("ready", start=m2)
    assert "".join(e["delta"] for e in eng.since(m2, "assistant_delta")) == "still alive"
    assert (eng.cwd / "f.txt").read_text() == "hello\n"
