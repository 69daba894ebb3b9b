"""A synchronous MCP client over any transport: handshake, requests by id, cached lists.

Callers block on a per-request ``queue.Queue(1)`` with the server's timeout while the
transport's reader thread routes replies by id. Server→client requests are answered on the
reader thread (``ping``, ``roots/list``; anything else -32601). ``*/list_changed``
notifications mark a cache dirty and call ``on_change`` so the owner can refresh it off the
caller's path.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
from typing import Callable, Optional

from .. import __version__

log = logging.getLogger("jucode.mcp")

PROTOCOL_VERSION = "2025-06-18"
MAX_LIST_PAGES = 64

_LIST_KEYS = {"tools": ("tools/list", "tools"),
              "prompts": ("prompts/list", "prompts"),
              "resources": ("resources/list", "resources")}
_CHANGED = {"notifications/tools/list_changed": "tools",
            "notifications/prompts/list_changed": "prompts",
            "notifications/resources/list_changed": "resources"}


class McpError(Exception):
    """Any MCP failure; ``str(e)`` is what the user or model sees."""

    def __init__(self, message: str, code: Optional[int] = None):
        super().__init__(message)
        self.code = code


class McpTimeout(McpError):
    pass


def path_to_file_uri(path: str) -> str:
    from urllib.parse import quote

    return "file://" + quote(path)


class McpClient:
    """One connection to one server. Thread-safe: many callers may request concurrently."""

    def __init__(self, name: str, transport, timeout: float, cwd: str,
                 on_change: Optional[Callable[[str], None]] = None,
                 on_closed: Optional[Callable[[str], None]] = None):
        self.name = name
        self.transport = transport
        self.timeout = timeout
        self.cwd = cwd
        self.on_change = on_change
        self.on_closed = on_closed
        self.server_info: dict = {}
        self.capabilities: dict = {}
        self.protocol_version = ""
        self.tools: list = []
        self.prompts: list = []
        self.resources: list = []
        self.dirty: set = set()
        self.closed_reason: Optional[str] = None
        self.initialized = False
        self._ids = itertools.count(1)
        self._pending: dict = {}
        self._lock = threading.Lock()
        self._closing = False                 # closed by us: no on_closed callback

    # ---- wire -------------------------------------------------------------------------

    def start(self) -> None:
        self.transport.start(self._on_message, self._on_transport_closed)

    def _on_message(self, msg: dict) -> None:
        if "id" in msg and ("result" in msg or "error" in msg) and "method" not in msg:
            with self._lock:
                waiter = self._pending.pop(msg["id"], None)
            if waiter is not None:
                waiter.put(msg)
            return
        method = msg.get("method")
        if not isinstance(method, str):
            return
        if "id" in msg:
            self._answer(msg["id"], method)
            return
        kind = _CHANGED.get(method)
        if kind:
            with self._lock:
                self.dirty.add(kind)
            if self.initialized and self.on_change:
                self.on_change(kind)

    def _answer(self, rid, method: str) -> None:
        if method == "ping":
            reply = {"jsonrpc": "2.0", "id": rid, "result": {}}
        elif method == "roots/list":
            reply = {"jsonrpc": "2.0", "id": rid, "result": {
                "roots": [{"uri": path_to_file_uri(self.cwd), "name": "workspace"}]}}
        else:
            reply = {"jsonrpc": "2.0", "id": rid,
                     "error": {"code": -32601, "message": f"Method not found: {method}"}}
        try:
            self.transport.send(reply)
        except Exception as exc:
            log.debug("MCP server %s: could not answer %s: %s", self.name, method, exc)

    def _on_transport_closed(self, reason: str) -> None:
        if self.closed_reason is None:
            self.closed_reason = reason
        with self._lock:
            waiters = list(self._pending.values())
            self._pending.clear()
        for waiter in waiters:
            waiter.put({"error": {"code": -32000, "message": self.closed_reason}})
        if self.on_closed and not self._closing:
            self.on_closed(self.closed_reason)

    def request(self, method: str, params: Optional[dict] = None,
                timeout: Optional[float] = None,
                interrupt: Optional[threading.Event] = None) -> dict:
        """Send one request and wait for its reply; raises :class:`McpError` on any failure."""
        if self.closed_reason is not None:
            raise McpError(self.closed_reason)
        limit = self.timeout if timeout is None else timeout
        rid = next(self._ids)
        waiter: queue.Queue = queue.Queue(1)
        with self._lock:
            self._pending[rid] = waiter
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        try:
            self.transport.send(msg)
        except Exception as exc:
            with self._lock:
                self._pending.pop(rid, None)
            raise McpError(self.closed_reason or str(exc)) from exc
        reply = self._wait(waiter, limit, interrupt)
        if reply is None:
            with self._lock:
                self._pending.pop(rid, None)
            self._cancel(rid, "interrupted" if interrupt is not None and interrupt.is_set()
                         else "timeout")
            if interrupt is not None and interrupt.is_set():
                raise McpError("interrupted")
            raise McpTimeout(f"{method} timed out after {_secs(limit)}s")
        if "error" in reply:
            err = reply["error"] if isinstance(reply["error"], dict) else {"message": reply["error"]}
            raise McpError(str(err.get("message") or "unknown error"), err.get("code"))
        result = reply.get("result")
        return result if isinstance(result, dict) else {}

    @staticmethod
    def _wait(waiter: queue.Queue, limit: float, interrupt: Optional[threading.Event]):
        if interrupt is None:
            try:
                return waiter.get(timeout=limit)
            except queue.Empty:
                return None
        import time

        deadline = time.monotonic() + limit
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or interrupt.is_set():
                return None
            try:
                return waiter.get(timeout=min(left, 0.1))
            except queue.Empty:
                continue

    def _cancel(self, rid: int, reason: str) -> None:
        try:
            self.notify("notifications/cancelled", {"requestId": rid, "reason": reason})
        except Exception:
            pass

    def notify(self, method: str, params: Optional[dict] = None) -> None:
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.transport.send(msg)

    # ---- session ----------------------------------------------------------------------

    def connect(self) -> None:
        """Start the transport, handshake, and fill every advertised list."""
        self.start()
        result = self.request("initialize", {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {"roots": {"listChanged": False}},
            "clientInfo": {"name": "jucode", "version": __version__},
        })
        self.server_info = result.get("serverInfo") or {}
        caps = result.get("capabilities")
        self.capabilities = caps if isinstance(caps, dict) else {}
        self.protocol_version = str(result.get("protocolVersion") or PROTOCOL_VERSION)
        if hasattr(self.transport, "protocol_version"):
            self.transport.protocol_version = self.protocol_version
        self.notify("notifications/initialized")
        with self._lock:
            self.dirty.clear()
        for kind in ("tools", "prompts", "resources"):
            if kind in self.capabilities:
                setattr(self, kind, self.list_all(kind))
        self.initialized = True

    def list_all(self, kind: str) -> list:
        """Every page of ``<kind>/list`` (at most 64 pages)."""
        method, key = _LIST_KEYS[kind]
        out: list = []
        cursor = None
        for _ in range(MAX_LIST_PAGES):
            result = self.request(method, {"cursor": cursor} if cursor else None)
            items = result.get(key)
            if isinstance(items, list):
                out.extend(i for i in items if isinstance(i, dict))
            cursor = result.get("nextCursor")
            if not cursor:
                break
        return out

    def refresh_dirty(self) -> bool:
        """Re-list every cache a list_changed notification marked; True if anything changed."""
        changed = False
        while True:
            with self._lock:
                if not self.dirty:
                    return changed
                kind = self.dirty.pop()
            if kind not in self.capabilities:
                continue
            fresh = self.list_all(kind)
            if fresh != getattr(self, kind):
                setattr(self, kind, fresh)
                changed = True

    @property
    def has_resources(self) -> bool:
        return "resources" in self.capabilities

    def call_tool(self, name: str, arguments: dict,
                  interrupt: Optional[threading.Event] = None) -> dict:
        return self.request("tools/call", {"name": name, "arguments": arguments},
                            interrupt=interrupt)

    def get_prompt(self, name: str, arguments: dict) -> dict:
        return self.request("prompts/get", {"name": name, "arguments": arguments})

    def read_resource(self, uri: str, interrupt: Optional[threading.Event] = None) -> dict:
        return self.request("resources/read", {"uri": uri}, interrupt=interrupt)

    def close(self) -> None:
        """Fail every waiter and end the transport (kills a stdio child's whole group)."""
        self._closing = True
        self._on_transport_closed("connection closed")
        self.transport.close()


def _secs(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
