"""Shell tools: ``bash`` (aliases ``execute``/``shell_command``), ``exec_command`` and
``write_stdin``, plus :class:`ShellSessions` for commands that outlive one tool call.

Output goes to temp files, never pipes: a command printing gigabytes cannot deadlock us or
grow our memory, and only the tail we report is ever read back. Each command runs in its own
process group so a timeout or interrupt can kill grandchildren too.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import tempfile
import threading
import time
from typing import Dict, List, Optional, Tuple

from .base import ToolContext, ToolError
from .common import expand_path, get_int

MAX_LINES = 3000
MAX_BYTES = 128 * 1024
PROGRESS_EVERY = 0.5
POLL = 0.05
DEFAULT_TIMEOUT = 60
MAX_TIMEOUT = 7 * 24 * 3600
MISSING_COMMAND = "missing command; use `command` for bash or `cmd` for exec_command"
SESSION_NOTE = "command is still running; use write_stdin with this session_id to poll or send input"

_file_counter = itertools.count(1)
_session_ids = itertools.count(1)
_session_lock = threading.Lock()


def _temp_log(label: str) -> str:
    name = f"jucode-tool-{label}-{os.getpid()}-{time.time_ns()}-{next(_file_counter)}.log"
    return os.path.join(tempfile.gettempdir(), name)


def read_tail(path: str, max_bytes: int = MAX_BYTES, max_lines: int = MAX_LINES) -> Tuple[str, bool]:
    """The last ``max_lines`` lines / ``max_bytes`` bytes of a log, with upstream's prefix when cut."""
    try:
        size = os.path.getsize(path)
    except OSError:
        return "", False
    with open(path, "rb") as fh:
        start = max(0, size - max_bytes)
        fh.seek(start)
        data = fh.read(size - start)
    cut = start
    # Keep at most max_lines lines of what we read.
    nl = len(data)
    lines = 0
    body_end = len(data) - 1 if data.endswith(b"\n") else len(data)
    idx = body_end
    while lines < max_lines:
        idx = data.rfind(b"\n", 0, idx)
        if idx < 0:
            break
        lines += 1
    if lines >= max_lines and idx >= 0:
        cut = start + idx + 1
        data = data[idx + 1:]
    del nl
    if cut == 0:
        return data.decode("utf-8", "replace"), False
    # Skip a partial UTF-8 sequence at the cut so we never emit a replacement char for it.
    skip = 0
    while skip < len(data) and skip < 3 and 0x80 <= data[skip] <= 0xBF:
        skip += 1
    data = data[skip:]
    omitted_bytes = cut + skip
    omitted_lines = _count_newlines(path, omitted_bytes)
    prefix = (f"[...command output truncated: omitted {omitted_lines} earlier lines and "
              f"{omitted_bytes} bytes...]\n")
    return prefix + data.decode("utf-8", "replace"), True


def _count_newlines(path: str, upto: int) -> int:
    count, left = 0, upto
    with open(path, "rb") as fh:
        while left > 0:
            chunk = fh.read(min(left, 1 << 20))
            if not chunk:
                break
            count += chunk.count(b"\n")
            left -= len(chunk)
    return count


def _last_lines(path: str, n: int) -> List[str]:
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            fh.seek(max(0, size - 4096))
            data = fh.read()
    except OSError:
        return []
    return data.decode("utf-8", "replace").splitlines()[-n:]


_LIVE: "set[ShellProcess]" = set()
_LIVE_LOCK = threading.Lock()


def kill_all_live() -> None:
    """Kill the process group of every command still running (engine shutdown: no orphans)."""
    with _LIVE_LOCK:
        procs = list(_LIVE)
    for p in procs:
        p.kill(signal.SIGKILL)


class ShellProcess:
    """One spawned command: process group, log files, deadline."""

    def __init__(self, command: str, workdir: str, timeout: float, label: str,
                 login: bool = True, stdin_pipe: bool = False):
        self.command = command
        self.out_path = _temp_log(f"{label}-stdout")
        self.err_path = _temp_log(f"{label}-stderr")
        self.started = time.monotonic()
        self.deadline = self.started + timeout
        self.max_bytes = MAX_BYTES
        self.timed_out = False
        out = open(self.out_path, "wb")
        err = open(self.err_path, "wb")
        try:
            self.proc = subprocess.Popen(
                ["sh", "-lc" if login else "-c", command], cwd=workdir,
                stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
                stdout=out, stderr=err, start_new_session=True, close_fds=True)
        except OSError:
            self.cleanup()
            raise
        finally:
            out.close()
            err.close()
        with _LIVE_LOCK:
            _LIVE.add(self)

    def poll(self) -> Optional[int]:
        return self.proc.poll()

    def kill(self, sig: int = signal.SIGKILL) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        if sig == signal.SIGKILL:
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass

    def terminate_gracefully(self) -> None:
        """SIGTERM, up to 10×50 ms, then SIGKILL (how owned sessions are closed)."""
        if self.poll() is None:
            self.kill(signal.SIGTERM)
            for _ in range(10):
                if self.poll() is not None:
                    break
                time.sleep(POLL)
        self.kill(signal.SIGKILL)

    def write(self, text: str) -> None:
        if self.proc.stdin is None:
            return
        try:
            self.proc.stdin.write(text.encode("utf-8"))
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass

    def progress_text(self) -> str:
        lines = (_last_lines(self.out_path, 8) + _last_lines(self.err_path, 8))[-8:]
        elapsed = time.monotonic() - self.started
        return "\n".join([f"running {elapsed:.1f}s"] + lines)

    def output(self) -> Tuple[str, str, bool]:
        out, t1 = read_tail(self.out_path, self.max_bytes)
        err, t2 = read_tail(self.err_path, self.max_bytes)
        return out, err, t1 or t2

    def sizes(self) -> Tuple[int, int]:
        total, lines = 0, 0
        for p in (self.out_path, self.err_path):
            try:
                total += os.path.getsize(p)
            except OSError:
                pass
        return total, lines

    def final_result(self) -> dict:
        code = self.proc.returncode
        out, err, truncated = self.output()
        res = {"command": self.command, "exit_code": code if code is not None and code >= 0 else None,
               "stdout": out, "stderr": err, "timed_out": self.timed_out, "truncated": truncated}
        if self.timed_out:
            res["warning"] = "command timed out"
            res["suggestion"] = ("the command exceeded its timeout and was killed; raise `timeout`, run it in "
                                 "the background, or (in a sandbox) retry with escalate:true if it was blocked")
        elif code is not None and code < 0:
            res["error"] = f"command terminated by signal {-code}"
        elif code is None:
            res["error"] = "command terminated without an exit code"
        if not self.timed_out and truncated:
            res["warning"] = "command output was truncated"
            res["suggestion"] = "pipe through head/tail/grep or write output to a file and read parts of it"
        elif not self.timed_out and self._large():
            res["warning"] = "large command output"
            res["suggestion"] = "narrow the command's output (grep, head, --quiet) to keep context small"
        self.cleanup()
        return res

    def _large(self) -> bool:
        total, _ = self.sizes()
        return total > MAX_BYTES

    def running_result(self, session_id: int, note: bool) -> dict:
        out, err, truncated = self.output()
        res = {"command": self.command, "session_id": session_id, "running": True,
               "stdout": out, "stderr": err, "truncated": truncated}
        if note:
            res["note"] = SESSION_NOTE
        return res

    def cleanup(self) -> None:
        with _LIVE_LOCK:
            _LIVE.discard(self)
        for p in (self.out_path, self.err_path):
            try:
                os.remove(p)
            except OSError:
                pass
        if getattr(self, "proc", None) is not None and self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass


class ShellSessions:
    """Shell sessions owned by one engine. Ids are process-wide so they never collide."""

    def __init__(self):
        self._lock = threading.Lock()
        self._sessions: Dict[int, Tuple[ShellProcess, str]] = {}

    def add(self, proc: ShellProcess, owner: str = "/root") -> int:
        with _session_lock:
            sid = next(_session_ids)
        with self._lock:
            self._sessions[sid] = (proc, owner)
        return sid

    def get(self, sid: int, owner: str = "/root") -> Optional[ShellProcess]:
        with self._lock:
            entry = self._sessions.get(sid)
        if entry is None or entry[1] != owner:
            return None
        return entry[0]

    def remove(self, sid: int) -> None:
        with self._lock:
            self._sessions.pop(sid, None)

    def ids(self) -> List[int]:
        with self._lock:
            return sorted(self._sessions)

    def close_all(self) -> None:
        with self._lock:
            procs = [p for p, _ in self._sessions.values()]
            self._sessions.clear()
        for p in procs:
            p.terminate_gracefully()
            p.cleanup()


_default_sessions = ShellSessions()


def _sessions(ctx: ToolContext) -> ShellSessions:
    return ctx.shell_sessions if ctx.shell_sessions is not None else _default_sessions


def _workdir(args: dict, ctx: ToolContext) -> str:
    raw = args.get("workdir")
    if raw is None or raw == "":
        return ctx.cwd
    if not isinstance(raw, str):
        raise ToolError("workdir must be a string")
    path = expand_path(raw, ctx.cwd)
    if not os.path.exists(path):
        raise ToolError(f"workdir does not exist: {path}")
    if not os.path.isdir(path):
        raise ToolError(f"workdir is not a directory: {path}")
    return path


def _wait(proc: ShellProcess, ctx: ToolContext, until: float, progress: bool) -> str:
    """Wait until exit / ``until`` / deadline / interrupt. Returns exited|yield|timeout|interrupted."""
    next_progress = time.monotonic() + PROGRESS_EVERY
    while True:
        if proc.poll() is not None:
            return "exited"
        if ctx.interrupt.is_set():
            return "interrupted"
        now = time.monotonic()
        if now >= proc.deadline:
            return "timeout"
        if now >= until:
            return "yield"
        if progress and now >= next_progress:
            next_progress = now + PROGRESS_EVERY
            try:
                ctx.progress(proc.progress_text())
            except Exception:  # a dead event sink means the turn is gone
                return "interrupted"
        wait_for = min(POLL, max(0.0, min(until, proc.deadline) - now))
        if ctx.interrupt.wait(wait_for):
            return "interrupted"


def _interrupted(proc: ShellProcess) -> dict:
    proc.kill()
    res = proc.final_result()
    res["error"] = "interrupted"
    return res


def run_command(args: dict, ctx: ToolContext, command: str, label: str) -> dict:
    workdir = _workdir(args, ctx)
    timeout = max(1, min(get_int(args, "timeout", DEFAULT_TIMEOUT), MAX_TIMEOUT))
    yield_ms = get_int(args, "yield_time_ms")
    login = args.get("login") is not False
    max_tokens = get_int(args, "max_output_tokens")
    session_mode = yield_ms is not None
    try:
        proc = ShellProcess(command, workdir, timeout, label, login=login, stdin_pipe=session_mode)
    except OSError as exc:
        raise ToolError(f"failed to start command: {exc}")
    if max_tokens:
        proc.max_bytes = max(256, min(MAX_BYTES, max_tokens * 4))
    if not session_mode:
        try:
            ctx.progress(f"started: {command}")
        except Exception:
            return _interrupted(proc)
        state = _wait(proc, ctx, float("inf"), progress=True)
    else:
        state = _wait(proc, ctx, time.monotonic() + min(yield_ms / 1000.0, timeout), progress=False)
    if state == "interrupted":
        return _interrupted(proc)
    if state == "timeout":
        proc.timed_out = True
        proc.kill()
        return proc.final_result()
    if state == "exited":
        return proc.final_result()
    sid = _sessions(ctx).add(proc, ctx.agent_path)
    return proc.running_result(sid, note=True)


def run_bash(args: dict, ctx: ToolContext) -> dict:
    command = args.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ToolError(MISSING_COMMAND)
    return run_command(args, ctx, command, "bash")


def run_exec_command(args: dict, ctx: ToolContext) -> dict:
    command = args.get("cmd")
    if not isinstance(command, str) or not command.strip():
        command = args.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ToolError(MISSING_COMMAND)
    return run_command(args, ctx, command, "exec")


def run_write_stdin(args: dict, ctx: ToolContext) -> dict:
    sid = args.get("session_id")
    if isinstance(sid, float) and sid.is_integer():
        sid = int(sid)
    if isinstance(sid, str) and sid.strip().isdigit():
        sid = int(sid.strip())
    if sid is None or isinstance(sid, bool) or not isinstance(sid, int) or not 0 <= sid < 2 ** 64:
        raise ToolError("missing session_id")   # like upstream's u64 parse: anything else is missing
    text = args.get("text")
    if not isinstance(text, str) or text == "":
        text = args.get("chars") if isinstance(args.get("chars"), str) else ""
    yield_ms = get_int(args, "yield_time_ms", 1000)
    sessions = _sessions(ctx)
    proc = sessions.get(sid, ctx.agent_path)
    if proc is None:
        return {"session_id": sid,
                "error": f"no running shell session {sid}: it has exited, was closed, or belongs to "
                         "another agent"}
    if text:
        proc.write(text)
    state = _wait(proc, ctx, time.monotonic() + min(yield_ms, 3_600_000) / 1000.0, progress=False)
    if state == "timeout":
        proc.timed_out = True
        proc.kill()
    if state in ("timeout", "exited"):
        sessions.remove(sid)
        res = proc.final_result()
        res["session_id"] = sid
        return res
    return proc.running_result(sid, note=False)
