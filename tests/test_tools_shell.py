import threading
import time

from harness import pid_alive, wait_until
from jucode.tools.shell import ShellSessions
from test_tools_helpers import call, make_ctx


def test_bash_success_and_failure(tmp_path):
    ctx = make_ctx(tmp_path)
    updates = []
    ctx.progress = updates.append
    res, err = call(ctx, "bash", {"command": "echo hi; echo oops >&2; printf '\\377\\n'"})
    assert not err
    assert res["stdout"] == "hi\n\ufffd\n" and res["stderr"] == "oops\n"
    assert res["exit_code"] == 0 and res["timed_out"] is False and res["truncated"] is False
    assert updates[0] == "started: echo hi; echo oops >&2; printf '\\377\\n'"
    res, err = call(ctx, "execute", {"command": "exit 3"})
    assert err and res["exit_code"] == 3
    assert call(ctx, "bash", {})[0] == {"error": "missing command; use `command` for bash or `cmd` for exec_command"}
    res, _ = call(ctx, "bash", {"command": "true", "workdir": "nope"})
    assert res["error"] == f"workdir does not exist: {tmp_path.resolve()}/nope"
    (tmp_path / "f").write_text("")
    res, _ = call(ctx, "shell_command", {"command": "true", "workdir": "f"})
    assert res["error"].startswith("workdir is not a directory: ")
    res, _ = call(ctx, "bash", {"command": "pwd", "workdir": str(tmp_path)})
    assert res["stdout"].strip() == str(tmp_path.resolve())


def test_progress_and_timeout(tmp_path):
    ctx = make_ctx(tmp_path)
    updates = []
    ctx.progress = updates.append
    t0 = time.monotonic()
    res, err = call(ctx, "bash", {"command": "echo tick; sleep 30", "timeout": 1})
    assert time.monotonic() - t0 < 5
    assert err and res["timed_out"] is True and res["warning"] == "command timed out"
    assert any(u.startswith("running ") and "tick" in u for u in updates[1:])


def test_interrupt_kills_grandchild(tmp_path):
    ctx = make_ctx(tmp_path)
    pidfile = tmp_path / "pid"
    box = {}
    t = threading.Thread(target=lambda: box.update(r=call(ctx, "bash", {
        "command": f"sh -c 'sleep 60 & echo $! > {pidfile}; wait'"})))
    t.start()
    assert wait_until(lambda: pidfile.exists() and pidfile.read_text().strip())
    pid = int(pidfile.read_text())
    assert pid_alive(pid)
    t0 = time.monotonic()
    ctx.interrupt.set()
    t.join(5)
    assert not t.is_alive() and time.monotonic() - t0 < 1.0
    assert box["r"][0]["error"] == "interrupted"
    assert wait_until(lambda: not pid_alive(pid), 5)


def test_output_truncation(tmp_path):
    ctx = make_ctx(tmp_path)
    res, err = call(ctx, "bash", {"command": "seq 1 5000"})
    assert res["truncated"] is True and res["warning"] == "command output was truncated"
    head, body = res["stdout"].split("\n", 1)
    assert head == "[...command output truncated: omitted 2000 earlier lines and 8893 bytes...]"
    assert body.splitlines()[0] == "2001" and body.endswith("5000\n")


def test_sessions(tmp_path):
    sessions = ShellSessions()
    ctx = make_ctx(tmp_path, shell_sessions=sessions)
    res, err = call(ctx, "exec_command", {"cmd": "read x; echo got $x", "yield_time_ms": 100})
    assert not err and res["running"] is True and res["note"].startswith("command is still running")
    sid = res["session_id"]
    res, err = call(ctx, "write_stdin", {"session_id": sid, "text": "hello\n", "yield_time_ms": 3000})
    assert not err and res["exit_code"] == 0 and res["stdout"] == "got hello\n"
    res, err = call(ctx, "write_stdin", {"session_id": sid})
    assert err and res["session_id"] == sid and res["error"].startswith(f"no running shell session {sid}: ")
    assert call(ctx, "write_stdin", {})[0] == {"error": "missing session_id"}
    res, _ = call(ctx, "exec_command", {"cmd": "echo $$; sleep 60", "yield_time_ms": 200})
    sid2 = res["session_id"]
    assert sid2 > sid
    assert wait_until(lambda: call(ctx, "write_stdin", {"session_id": sid2, "yield_time_ms": 0})[0]["stdout"])
    pid = int(call(ctx, "write_stdin", {"session_id": sid2, "yield_time_ms": 0})[0]["stdout"])
    other = make_ctx(tmp_path, shell_sessions=sessions, agent_path="/root/child")
    assert "error" in call(other, "write_stdin", {"session_id": sid2})[0]
    sessions.close_all()
    assert wait_until(lambda: not pid_alive(pid), 5)
    # finished within the yield window -> a normal result, no session
    res, _ = call(ctx, "exec_command", {"cmd": "echo quick", "yield_time_ms": 5000})
    assert res["stdout"] == "quick\n" and "session_id" not in res
