"""Byte-level MCP transports: a stdio child process and streamable HTTP.

A transport moves whole JSON-RPC messages (dicts). It delivers everything the server sends
through ``on_message(msg)`` and reports the end of the connection once through
``on_closed(reason)``. It knows nothing about ids or methods; :mod:`jucode.mcp.client` does.

Why threads and not asyncio: the engine is threaded end to end. stdio gets one reader thread
for stdout and one draining stderr (a chatty server would otherwise block on a full pipe);
HTTP runs each POST on a short-lived thread so a caller's per-request timeout stays in the
caller's hands.
"""

from __future__ import annotations

import collections
import json
import logging
import os
import signal
import subprocess
import threading
from typing import Callable, Optional

log = logging.getLogger("jucode.mcp")

OnMessage = Callable[[dict], None]
OnClosed = Callable[[str], None]


class TransportError(Exception):
    """The transport could not start or send; ``str(e)`` is readable by a user."""


def _short(text: str, limit: int = 200) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + "…"


class StdioTransport:
    """A server child process speaking newline-delimited JSON-RPC on stdin/stdout.

    The child runs in its own session (process group) so closing kills its whole tree,
    e.g. ``npx`` plus the node process it spawns.
    """

    def __init__(self, name: str, command: str, args: list, env: dict, cwd: str):
        self.name = name
        self.argv = [command, *args]
        self.env = {**os.environ, **(env or {})}
        self.cwd = cwd
        self.proc: Optional[subprocess.Popen] = None
        self.stderr_tail: collections.deque = collections.deque(maxlen=20)
        self.last_garbage = ""               # last non-JSON stdout line, for error messages
        self._wlock = threading.Lock()
        self._closed = threading.Event()
        self._closed_reported = False
        self._stderr_done = threading.Event()

    @property
    def pid(self) -> Optional[int]:
        return self.proc.pid if self.proc else None

    def start(self, on_message: OnMessage, on_closed: OnClosed) -> None:
        try:
            self.proc = subprocess.Popen(
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=self.env, cwd=self.cwd, bufsize=0, start_new_session=True)
        except OSError as exc:
            raise TransportError(f"failed to start {self.argv[0]}: {exc.strerror or exc}") from exc
        threading.Thread(target=self._read_stdout, args=(on_message, on_closed),
                         name=f"mcp-{self.name}-out", daemon=True).start()
        threading.Thread(target=self._drain_stderr, name=f"mcp-{self.name}-err",
                         daemon=True).start()

    def _read_stdout(self, on_message: OnMessage, on_closed: OnClosed) -> None:
        proc = self.proc
        assert proc is not None and proc.stdout is not None
        try:
            for raw in proc.stdout:
                line = raw.strip()
                if not line:
                    continue
                try:
                    msg = json.loads(line)
                except ValueError:
                    msg = None
                if not isinstance(msg, dict):
                    self.last_garbage = _short(raw.decode("utf-8", "replace"))
                    log.warning("MCP server %s wrote non-JSON to stdout: %s", self.name,
                                self.last_garbage)
                    continue
                try:
                    on_message(msg)
                except Exception:                       # a handler bug must not kill the reader
                    log.exception("MCP server %s: message handler failed", self.name)
        except (OSError, ValueError):
            pass
        on_closed(self._exit_reason())

    def _drain_stderr(self) -> None:
        proc = self.proc
        assert proc is not None and proc.stderr is not None
        try:
            for raw in proc.stderr:
                text = raw.decode("utf-8", "replace").rstrip()
                if text:
                    self.stderr_tail.append(text)
                    log.debug("mcp[%s] %s", self.name, text)
        except (OSError, ValueError):
            pass
        self._stderr_done.set()

    def _exit_reason(self) -> str:
        if self._closed.is_set():
            return "connection closed"
        proc = self.proc
        code = None
        if proc is not None:
            try:
                code = proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                code = None
        self._stderr_done.wait(0.5)               # let the last stderr lines land
        if code is None:
            reason = "server closed its stdout"
        else:
            reason = f"server exited with code {code}"
        if self.stderr_tail:
            reason += f": {_short(self.stderr_tail[-1])}"
        elif self.last_garbage:
            reason += f" (stdout was not JSON-RPC: {self.last_garbage})"
        return reason

    def send(self, msg: dict) -> None:
        proc = self.proc
        if proc is None or proc.stdin is None or self._closed.is_set():
            raise TransportError("connection closed")
        data = (json.dumps(msg, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")
        try:
            with self._wlock:
                proc.stdin.write(data)
                proc.stdin.flush()
        except (OSError, ValueError) as exc:
            raise TransportError("server is not reading its stdin (it may have exited)") from exc

    def close(self, grace: float = 0.5) -> None:
        """Close stdin, give the server ``grace`` seconds, then TERM and KILL its group."""
        self._closed.set()
        proc = self.proc
        if proc is None:
            return
        try:
            if proc.stdin:
                proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self._signal_group(signal.SIGTERM)
            try:
                proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                pass
        # Always finish with KILL to the group: grandchildren may outlive the leader.
        self._signal_group(signal.SIGKILL)
        try:
            proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            log.warning("MCP server %s (pid %s) did not die", self.name, proc.pid)

    def _signal_group(self, sig: int) -> None:
        proc = self.proc
        if proc is None:
            return
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            if proc.poll() is None:
                try:
                    proc.send_signal(sig)
                except OSError:
                    pass

    def describe_failure(self) -> str:
        """Extra context for a timeout: what the server said on stderr or wrote as garbage."""
        if self.last_garbage:
            return f"stdout was not JSON-RPC: {self.last_garbage}"
        if self.stderr_tail:
            return f"stderr: {_short(self.stderr_tail[-1])}"
        return ""


def iter_sse_data(resp):
    """Yield the ``data`` payload of each SSE event of a streaming ``requests`` response."""
    data: list[str] = []
    for line in resp.iter_lines(decode_unicode=True):
        if line is None:
            continue
        if line == "":
            if data:
                yield "\n".join(data)
            data = []
            continue
        if line.startswith(":"):
            continue
        field_name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field_name == "data":
            data.append(value)
    if data:
        yield "\n".join(data)


class HttpTransport:
    """MCP streamable HTTP: every message is a POST; replies come as JSON or as an SSE stream.

    No GET stream is opened (upstream doesn't either): server-initiated messages arrive only
    on a POST's SSE reply. ``mcp-session-id`` from the server is echoed on later requests;
    ``mcp-protocol-version`` is sent once negotiated.

    ``auth(rejected)`` (optional) returns the bearer token to send, or None for no
    ``Authorization`` header; after a 401 it is asked again with the rejected token and the
    request is retried once if that yields a different one (an OAuth refresh).
    """

    def __init__(self, name: str, url: str, headers: dict, timeout: float,
                 auth: Optional[Callable[[Optional[str]], Optional[str]]] = None):
        self.name = name
        self.auth = auth
        self._token: Optional[str] = None      # last bearer sent (never logged)
        self.url = url
        self.extra_headers = dict(headers or {})
        self.timeout = timeout
        self.session_id: Optional[str] = None
        self.protocol_version: Optional[str] = None
        self._session = None
        self._on_message: Optional[OnMessage] = None
        self._closed = threading.Event()
        self.last_error = ""

    pid = None

    def start(self, on_message: OnMessage, on_closed: OnClosed) -> None:
        import requests  # lazy: keeps engine startup fast

        self._session = requests.Session()
        self._on_message = on_message
        self._on_closed = on_closed

    def _headers(self, token: Optional[str] = None) -> dict:
        headers = {"Accept": "application/json, text/event-stream",
                   "Content-Type": "application/json"}
        headers.update(self.extra_headers)
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version:
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    def send(self, msg: dict) -> None:
        if self._closed.is_set() or self._session is None:
            raise TransportError("connection closed")
        if "id" in msg and "method" in msg:
            # A request: its reply may take long, so it is read on its own thread.
            threading.Thread(target=self._post, args=(msg,), name=f"mcp-{self.name}-post",
                             daemon=True).start()
        else:
            self._post(msg)                     # notifications/responses: 202, no body

    def _fail(self, msg: dict, text: str) -> None:
        self.last_error = text
        if "id" in msg and "method" in msg and self._on_message:
            self._on_message({"jsonrpc": "2.0", "id": msg["id"],
                              "error": {"code": -32000, "message": text}})
        else:
            log.warning("MCP server %s: %s", self.name, text)

    def _post(self, msg: dict) -> None:
        import requests

        body = json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        resp = None
        try:
            token = self._bearer(None)
            resp = self._send_post(body, token)
            if resp is not None and resp.status_code == 401 and self.auth is not None:
                fresh = self._bearer(token)          # refresh once, then retry once
                if fresh and fresh != token:
                    resp.close()
                    resp = self._send_post(body, fresh)
        except requests.RequestException as exc:
            self._fail(msg, f"HTTP request failed: {exc}")
            return
        except Exception as exc:                     # McpAuthError: its text holds no secret
            if resp is not None:
                resp.close()
            self._fail(msg, str(exc))
            return
        self._read_reply(msg, resp)

    def _send_post(self, body: bytes, token: Optional[str]):
        return self._session.post(self.url, data=body, headers=self._headers(token), stream=True,
                                  timeout=(min(self.timeout, 30), self.timeout + 5))

    def _bearer(self, rejected: Optional[str]) -> Optional[str]:
        if self.auth is None:
            return None
        token = self.auth(rejected)
        self._token = token
        return token

    def _read_reply(self, msg: dict, resp) -> None:
        import requests

        try:
            sid = resp.headers.get("mcp-session-id")
            if sid:
                self.session_id = sid
            if resp.status_code >= 400:
                self._fail(msg, f"HTTP {resp.status_code}: {_short(resp.text or resp.reason or '')}")
                return
            if resp.status_code == 202 or "id" not in msg or "method" not in msg:
                return
            ctype = (resp.headers.get("content-type") or "").split(";")[0].strip().lower()
            if ctype == "text/event-stream":
                got_reply = False
                for data in iter_sse_data(resp):
                    try:
                        item = json.loads(data)
                    except ValueError:
                        continue
                    if isinstance(item, dict):
                        self._deliver(item)
                        if item.get("id") == msg["id"] and ("result" in item or "error" in item):
                            got_reply = True
                            break                    # read until the matching id
                if not got_reply:
                    self._fail(msg, "HTTP stream ended without a response")
            else:
                try:
                    payload = resp.json()
                except ValueError:
                    self._fail(msg, f"HTTP reply was not JSON: {_short(resp.text or '')}")
                    return
                for item in payload if isinstance(payload, list) else [payload]:
                    if isinstance(item, dict):
                        self._deliver(item)
        except requests.RequestException as exc:
            self._fail(msg, f"HTTP read failed: {exc}")
        finally:
            resp.close()

    def _deliver(self, item: dict) -> None:
        if self._on_message is None:
            return
        try:
            self._on_message(item)
        except Exception:
            log.exception("MCP server %s: message handler failed", self.name)

    def close(self, grace: float = 0.5) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        session = self._session
        if session is None:
            return
        if self.session_id:
            try:
                session.delete(self.url, headers=self._headers(self._token), timeout=min(grace + 0.5, 2.0))
            except Exception:                  # best effort: the server may already be gone
                pass
        session.close()

    def describe_failure(self) -> str:
        return self.last_error
