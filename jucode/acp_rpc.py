"""JSON-RPC 2.0 over newline-delimited JSON, for ``jucode acp``: both directions, threads only.

The Agent Client Protocol is symmetric: the editor calls us (``session/prompt``) and we call the
editor (``session/request_permission``) on the same pipe. :class:`RpcPeer` serializes every
outgoing line under one lock (several session threads write), hands incoming requests and
notifications to a dispatcher, and routes responses to the callback registered with
:meth:`RpcPeer.request`.
"""

from __future__ import annotations

import itertools
import logging
import threading
from typing import Callable, Optional

import orjson

log = logging.getLogger("jucode.acp")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


class RpcError(Exception):
    """Raised by a handler to answer the request with a JSON-RPC error."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


class RpcPeer:
    def __init__(self, rstream, wstream):
        from .serve import LineWriter
        self._in = rstream
        self._out = LineWriter(wstream)
        self._ids = itertools.count(1)
        self._waiting: dict = {}          # our request id -> callback(result, error)
        self._wlock = threading.Lock()

    # -- writing (any thread) ----------------------------------------------------------------
    def send(self, msg: dict) -> None:
        self._out.write_obj(dict(msg, jsonrpc="2.0"))

    @property
    def closed(self) -> bool:
        return self._out.broken

    def notify(self, method: str, params: dict) -> None:
        self.send({"method": method, "params": params})

    def respond(self, req_id, result) -> None:
        self.send({"id": req_id, "result": result})

    def respond_error(self, req_id, code: int, message: str) -> None:
        self.send({"id": req_id, "error": {"code": code, "message": message}})

    def request(self, method: str, params: dict,
                callback: Callable[[Optional[dict], Optional[dict]], None]) -> int:
        """Send a request; ``callback(result, error)`` runs on the reader thread when answered
        (or with an error when the pipe closes first)."""
        rid = next(self._ids)
        with self._wlock:
            self._waiting[rid] = callback
        self.send({"id": rid, "method": method, "params": params})
        return rid

    # -- reading (the thread that calls serve) -------------------------------------------------
    def serve(self, on_request: Callable[[object, str, dict], None],
              on_notification: Callable[[str, dict], None]) -> None:
        """Read lines until EOF. ``on_request(id, method, params)`` must answer (now or later)
        with :meth:`respond` / :meth:`respond_error`; it may raise :class:`RpcError`."""
        while True:
            try:
                line = self._in.readline()
            except (OSError, ValueError):
                break
            if not line:
                break
            line = line.strip()
            if not line:
                continue
            try:
                msg = orjson.loads(line)
            except orjson.JSONDecodeError as e:
                self.respond_error(None, PARSE_ERROR, f"parse error: {e}")
                continue
            if not isinstance(msg, dict):
                self.respond_error(None, INVALID_REQUEST, "invalid request: expected an object")
                continue
            self._dispatch(msg, on_request, on_notification)
        self._fail_waiting()

    def _dispatch(self, msg: dict, on_request, on_notification) -> None:
        method = msg.get("method")
        if method is None:
            if "id" in msg:
                with self._wlock:
                    cb = self._waiting.pop(msg.get("id"), None)
                if cb is not None:
                    _safe(cb, msg.get("result"), msg.get("error"))
            return
        params = msg.get("params")
        if params is None:
            params = {}
        if not isinstance(method, str) or not isinstance(params, dict):
            if "id" in msg:
                self.respond_error(msg["id"], INVALID_REQUEST, "invalid request")
            return
        if "id" not in msg:
            _safe(on_notification, method, params)
            return
        rid = msg["id"]
        try:
            on_request(rid, method, params)
        except RpcError as e:
            self.respond_error(rid, e.code, e.message)
        except Exception as e:  # a handler bug must not take the server down
            log.exception("acp handler failed")
            self.respond_error(rid, INTERNAL_ERROR, f"internal error: {e}")

    def _fail_waiting(self) -> None:
        with self._wlock:
            waiting, self._waiting = self._waiting, {}
        for cb in waiting.values():
            _safe(cb, None, {"code": INTERNAL_ERROR, "message": "connection closed"})


def _safe(fn, *args) -> None:
    try:
        fn(*args)
    except Exception:
        log.exception("acp callback failed")
