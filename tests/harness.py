"""Drive the real engine as a subprocess over pipes, as a front-end does.

``EngineProc`` starts ``python jucode.py serve`` with a scratch profile and HOME, a scratch
working directory, and OPENAI_BASE_URL pointed at a :class:`FakeModelServer`. A reader
thread parses every stdout line (each must be one JSON object) into ``events``; tests wait
for events with a timeout instead of sleeping.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENTRY = ROOT / "jucode.py"
NO_CONFIG = object()             # engine(config=NO_CONFIG): write no config.json at all
PROTOCOL_BUGS: list[str] = []     # every "protocol bug:" error any engine reported (see conftest)


class EngineProc:
    def __init__(self, tmp: Path, server=None, args=("serve",), config: dict | None = None,
                 env: dict | None = None, cwd: Path | None = None, home: Path | None = None,
                 api_key: str | None = "sk-test-key-123456", python_args: tuple = ()):
        self.tmp = Path(tmp)
        self.home = Path(home) if home else self.tmp / "home"
        self.profile = self.home / ".jucode"
        self.cwd = Path(cwd) if cwd else self.tmp / "work"
        self.home.mkdir(parents=True, exist_ok=True)
        self.profile.mkdir(parents=True, exist_ok=True)
        self.cwd.mkdir(parents=True, exist_ok=True)
        if config is not None:
            cfg = {"provider": "openai", "model": "gpt-test", "retry_attempts": 5,
                   "include_project_instructions": False}
            cfg.update(config)
            if not (self.profile / "config.json").exists():
                (self.profile / "config.json").write_text(json.dumps(cfg, indent=2))
        e = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "JUCODE_", "ANTHROPIC_"))}
        e.update({"HOME": str(self.home), "JUCODE_HOME": str(self.profile), "PYTHONUNBUFFERED": "1",
                  "JUCODE_STRICT_EVENTS": "1"})
        if api_key:
            e["OPENAI_API_KEY"] = api_key
        if server is not None:
            e["OPENAI_BASE_URL"] = server.base_url
        e.update(env or {})
        self.stderr_path = self.tmp / f"stderr-{time.monotonic_ns()}.log"
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen([sys.executable, *python_args, str(ENTRY), *args], cwd=str(self.cwd), env=e,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr)
        self.events: list[dict] = []
        self.raw_lines: list[bytes] = []
        self.cond = threading.Condition()
        self.eof = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    # -- reading ----------------------------------------------------------------------------
    def _read(self) -> None:
        for line in self.proc.stdout:
            with self.cond:
                self.raw_lines.append(line)
                try:
                    ev = json.loads(line)
                except ValueError:
                    ev = {"type": "__non_json__", "line": line.decode("utf-8", "replace")}
                self.events.append(ev)
                self.cond.notify_all()
        with self.cond:
            self.eof = True
            self.cond.notify_all()

    def wait_for(self, pred, timeout: float = 10.0, start: int = 0, what: str = ""):
        """Wait for the first event at index >= start matching pred (a type string or callable)."""
        if isinstance(pred, str):
            t = pred
            pred = lambda e: e.get("type") == t  # noqa: E731
            what = what or t
        deadline = time.monotonic() + timeout
        i = start
        with self.cond:
            while True:
                while i < len(self.events):
                    if pred(self.events[i]):
                        return self.events[i]
                    i += 1
                left = deadline - time.monotonic()
                if left <= 0 or self.eof:
                    if self.eof and i >= len(self.events):
                        pass
                    raise AssertionError(f"timed out waiting for {what or pred}; events: "
                                         f"{[e.get('type') for e in self.events[start:]][-40:]}\n"
                                         f"stderr: {self.stderr_text()[-2000:]}")
                self.cond.wait(min(left, 0.5))

    def wait_status(self, message: str, timeout: float = 10.0, start: int = 0) -> dict:
        return self.wait_for(lambda e: e.get("type") == "status" and e.get("message") == message,
                             timeout, start, what=f"status {message!r}")

    def mark(self) -> int:
        with self.cond:
            return len(self.events)

    def since(self, mark: int, type_: str | None = None) -> list[dict]:
        with self.cond:
            evs = self.events[mark:]
        return [e for e in evs if type_ is None or e.get("type") == type_]

    def types_since(self, mark: int) -> list[str]:
        return [e.get("type") for e in self.since(mark)]

    def wait_startup(self, timeout: float = 15.0) -> dict:
        return self.wait_for("mcp_servers", timeout)

    # -- writing ----------------------------------------------------------------------------
    def send(self, op) -> int:
        """Send an op (dict → JSON line, or raw str/bytes); returns the event mark before it."""
        m = self.mark()
        if isinstance(op, dict):
            data = json.dumps(op).encode() + b"\n"
        elif isinstance(op, str):
            data = op.encode() + b"\n"
        else:
            data = op
        self.proc.stdin.write(data)
        self.proc.stdin.flush()
        return m

    def close_stdin(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass

    def wait_exit(self, timeout: float = 10.0) -> int:
        return self.proc.wait(timeout)

    def stderr_text(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")
        except OSError:
            return ""

    def protocol_bugs(self) -> list[str]:
        with self.cond:
            return [e["message"] for e in self.events
                    if e.get("type") == "error" and str(e.get("message", "")).startswith("protocol bug:")]

    def close(self) -> None:
        bugs = self.protocol_bugs()
        if bugs:
            PROTOCOL_BUGS.extend(bugs)
        if self.proc.poll() is None:
            try:
                self.send({"op": "shutdown"})
            except (OSError, ValueError):
                pass
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._stderr.close()


# -- shared helpers (one copy for every test file) --------------------------------------------
def pid_alive(pid: int) -> bool:
    """True while ``pid`` names a live, non-zombie process.

    Why the /proc check: a dead child nobody has reaped yet still answers signal 0."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def wait_until(cond, timeout: float = 10.0, interval: float = 0.05) -> bool:
    """Poll ``cond()`` until it is truthy or ``timeout`` passes; returns the last verdict.

    Why: tests must wait for a condition, never for a fixed time."""
    deadline = time.monotonic() + timeout
    while True:
        if cond():
            return True
        if time.monotonic() >= deadline:
            return bool(cond())
        time.sleep(interval)


def wait_file(path, timeout: float = 10.0) -> bool:
    """Wait for ``path`` to exist (written by a subprocess the test started)."""
    return wait_until(lambda: Path(path).exists(), timeout)


def run_command(eng: EngineProc, text: str, wait_type="status", timeout: float = 10.0) -> tuple[dict, int]:
    """Send a slash command; return (first event matching ``wait_type``, mark before sending).

    ``wait_type`` is an event type or a predicate, as for :meth:`EngineProc.wait_for`."""
    m = eng.send({"op": "command", "input": text})
    return eng.wait_for(wait_type, timeout=timeout, start=m), m


def run_turn(eng: EngineProc, text: str, timeout: float = 15.0) -> int:
    """Send a user message, wait for the session to be ready again; return the mark before it."""
    m = eng.send({"op": "user_message", "content": text})
    eng.wait_status("ready", start=m, timeout=timeout)
    return m


def read_pid_file(path, count: int, timeout: float = 10.0) -> list[int]:
    """Wait until the pid file a test server appends to holds ``count`` pids; return them all."""
    path = Path(path)
    pids: list[int] = []

    def enough() -> bool:
        nonlocal pids
        pids = [int(x) for x in path.read_text().split()] if path.exists() else []
        return len(pids) >= count
    if not wait_until(enough, timeout):
        raise AssertionError(f"expected {count} pids in {path}")
    return pids


class Inbox:
    """A thread-safe ``emit`` callback for in-process engine parts (MCP manager, clients) that
    tests wait on instead of sleeping."""

    def __init__(self):
        self.events: list[dict] = []
        self.cond = threading.Condition()

    def __call__(self, event: dict) -> None:
        with self.cond:
            self.events.append(event)
            self.cond.notify_all()

    def wait_for(self, pred, timeout: float = 10.0) -> dict:
        """The first event (oldest first) matching ``pred``; AssertionError after ``timeout``."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for ev in self.events:
                    if pred(ev):
                        return ev
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"condition not met; events: {self.events}")
                self.cond.wait(left)

    def wait_info(self, prefix: str, timeout: float = 20.0) -> str:
        """The message of the first ``info`` event starting with ``prefix``."""
        ev = self.wait_for(lambda e: e["type"] == "info" and e["message"].startswith(prefix), timeout)
        return ev["message"]

    def infos(self) -> list[str]:
        with self.cond:
            return [e["message"] for e in self.events if e["type"] == "info"]
