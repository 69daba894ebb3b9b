"""Debugging the real engine with pdb (engineering rule 2): ``python -m pdb jucode.py serve``
with a breakpoint in a tool that runs on a worker thread, and ``breakpoint()`` in any thread.

The debugger talks on stderr and reads the developer's lines from stdin while it is stopped;
the event stream on stdout stays JSON, and the engine carries on after ``c``.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
import time

from harness import ROOT, EngineProc, wait_until


def _first_statement_line(path, func: str) -> int:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef) and node.name == func:
            body = node.body
            if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]
            return body[0].lineno
    raise AssertionError(f"{func} not found in {path}")


def _stderr_has(eng: EngineProc, text: str, after: int = 0, timeout: float = 15.0) -> int:
    """Wait for ``text`` in the engine's stderr past offset ``after``; returns the offset past it."""
    found = {}

    def seen() -> bool:
        err = eng.stderr_text()
        i = err.find(text, after)
        if i >= 0:
            found["end"] = i + len(text)
        return i >= 0
    assert wait_until(seen, timeout=timeout, interval=0.05), f"{text!r} not on stderr:\n{eng.stderr_text()[-2000:]}"
    return found["end"]


def test_pdb_breakpoint_in_a_tool_stops_its_worker_and_the_pipe_stays_json(tmp_path, server):
    files = ROOT / "jucode" / "tools" / "files.py"
    line = _first_statement_line(files, "run_read")
    eng = EngineProc(tmp_path, server, config={}, python_args=("-m", "pdb"))
    try:
        (eng.cwd / "notes.txt").write_text("inside the debugger\n")
        # pdb's own first prompt reads these two lines before the engine exists
        eng.send(f"b {files}:{line}")
        eng.send("c")
        eng.wait_startup(timeout=30)
        json_lines = [ev for ev in eng.events if ev.get("type") != "__non_json__"]
        assert json_lines[0]["type"] == "hello"
        # the prompt pdb left open is closed with a newline, so hello has a line of its own
        assert any(raw.startswith(b'{"type":"hello"') for raw in eng.raw_lines)
        eng.send({"op": "set_approval_mode", "mode": "full-access"})
        server.script({"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}, "call_id": "r1"}]},
                      {"text": "read it"})
        m = eng.send({"op": "user_message", "content": "read the notes"})
        eng.wait_for(lambda e: e.get("type") == "tool_start" and e.get("call_id") == "r1", start=m, timeout=20)
        pos = _stderr_has(eng, f"files.py({line})run_read()")
        pos = _stderr_has(eng, "(Pdb) ", pos)
        assert not eng.since(m, "tool_output")            # the worker is stopped in the tool
        # while stopped, stdin lines go to pdb, whose answers go to stderr
        eng.send("p args['path']")
        pos = _stderr_has(eng, "'notes.txt'", pos)
        eng.send("c")
        out = eng.wait_for(lambda e: e.get("type") == "tool_output" and e.get("call_id") == "r1", start=m, timeout=20)
        assert "inside the debugger" in out["output"]
        eng.wait_status("ready", start=m, timeout=20)
        # after `c` lines are ops again, and nothing but JSON ever reached stdout after the prompt
        m2 = eng.send({"op": "no_such_op"})
        assert "no_such_op" in eng.wait_for("error", start=m2, timeout=10)["message"]
        first_json = next(i for i, raw in enumerate(eng.raw_lines) if b'"hello"' in raw)
        for raw in eng.raw_lines[first_json:]:
            assert isinstance(json.loads(raw), dict), raw
        assert not [ev for ev in eng.events[first_json:] if ev.get("type") == "__non_json__"]
        eng.send({"op": "shutdown"})
        assert eng.wait_exit(10) == 0
    finally:
        eng.close()


SCRIPT = textwrap.dedent("""
    import os, queue, sys, threading
    sys.path.insert(0, {root!r})
    from jucode.debugger import DebugConsole, install
    from jucode.serve import StdinReader

    console = DebugConsole()
    install(console)
    inbox = queue.SimpleQueue()
    StdinReader(sys.stdin.buffer, inbox, console).start()

    def tool():
        secret = 41
        breakpoint()
        return secret + 1

    box = []
    worker = threading.Thread(target=lambda: box.append(tool()))
    worker.start()
    worker.join(20)
    sys.__stdout__.write(f"result={{box}}\\n")
    sys.__stdout__.flush()
    kind, line = inbox.get(timeout=20)      # a line sent after `c` is an op again
    sys.__stdout__.write(f"next={{line!r}}\\n")
    sys.__stdout__.flush()
    os._exit(0)   # as the engine exits: the reader thread still blocks in stdin (no teardown)
""")


def test_breakpoint_in_a_worker_thread_reads_commands_from_the_reader(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT.format(root=str(ROOT))], cwd=str(tmp_path), env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # wait until the debugger is stopped before typing, as a developer would
        buf = b""
        deadline = time.monotonic() + 20
        while b"(Pdb) " not in buf and time.monotonic() < deadline:
            buf += proc.stderr.read1(4096)
        assert b"(Pdb) " in buf, buf
        proc.stdin.write(b"secret = 99\nc\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == b"result=[100]\n"
        proc.stdin.write(b'{"op":"shutdown"}\n')
        proc.stdin.flush()
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert out.decode().strip() == "next=b'{\"op\":\"shutdown\"}\\n'"
