"""``jucode acp``: an Agent Client Protocol (v1) server over stdio for Zed, JetBrains and other
ACP editors.

The main thread reads JSON-RPC lines and answers the quick requests itself; every ACP session
owns one engine running the serve main loop on its own thread (see :mod:`jucode.acp_session`),
so prompts, permission round-trips and cancels all go through the one engine core.
"""

from __future__ import annotations

import logging
import sys
import threading

from . import __version__
from .acp_rpc import INVALID_PARAMS, METHOD_NOT_FOUND, RpcError, RpcPeer

log = logging.getLogger("jucode.acp")

ACP_PROTOCOL_VERSION = 1
MCP_SETTLE_SECONDS = 10.0      # session/new waits at most this long for the editor's MCP servers


class AcpServer:
    def __init__(self, rstream, wstream, engine_argv=None):
        self.peer = RpcPeer(rstream, wstream)
        self.engine_argv = list(engine_argv or [])      # --replay FILE / --demo / --approval-mode
        self.sessions: dict = {}
        self._lock = threading.Lock()

    def serve(self) -> None:
        try:
            self.peer.serve(self.on_request, self.on_notification)
        finally:
            self.close()

    def close(self) -> None:
        with self._lock:
            sessions, self.sessions = list(self.sessions.values()), {}
        for s in sessions:
            s.close()
        for s in sessions:
            s.thread.join(10)

    # -- dispatch ----------------------------------------------------------------------------
    def on_request(self, rid, method: str, params: dict) -> None:
        if method == "initialize":
            self.peer.respond(rid, {
                "protocolVersion": ACP_PROTOCOL_VERSION,
                "agentCapabilities": {"loadSession": True,
                                      "promptCapabilities": {"image": True, "audio": False,
                                                             "embeddedContext": True},
                                      "mcpCapabilities": {"http": True, "sse": False}},
                "authMethods": [],
                "agentInfo": {"name": "jucode", "title": "JuCode", "version": __version__},
            })
        elif method == "authenticate":
            self.peer.respond(rid, {})
        elif method == "session/new":
            s = self._new_session(params.get("cwd"), mcp=params.get("mcpServers"))
            self._respond_when_mcp_settled(rid, s, lambda: {"sessionId": s.id, "modes": s.modes()})
        elif method == "session/load":
            sid = params.get("sessionId")
            if not isinstance(sid, str) or not sid:
                raise RpcError(INVALID_PARAMS, "sessionId is required")
            s = self._new_session(params.get("cwd"), load_id=sid, mcp=params.get("mcpServers"))
            s.replay_history()
            self._respond_when_mcp_settled(rid, s, lambda: {"modes": s.modes()})
        elif method == "session/prompt":
            self._session(params).prompt(rid, params.get("prompt"))
        elif method == "session/set_mode":
            s = self._session(params)
            s.set_mode(params.get("modeId"))
            self.peer.respond(rid, {})
        elif method == "session/cancel":             # tolerated as a request too
            self._session(params).cancel()
            self.peer.respond(rid, {})
        else:
            raise RpcError(METHOD_NOT_FOUND, f"method not found: {method}")

    def _respond_when_mcp_settled(self, rid, s, result) -> None:
        """Answer now, or once the session's own MCP servers settled (on a helper thread, so
        requests for other sessions keep flowing meanwhile)."""
        if not s.engine.opts.mcp_servers:
            self.peer.respond(rid, result())
            return

        def later() -> None:
            s.wait_for_mcp(MCP_SETTLE_SECONDS)
            self.peer.respond(rid, result())
        threading.Thread(target=later, name="acp-mcp-wait", daemon=True).start()

    def on_notification(self, method: str, params: dict) -> None:
        if method == "session/cancel":
            with self._lock:
                s = self.sessions.get(params.get("sessionId"))
            if s is not None:
                s.cancel()

    # -- sessions ------------------------------------------------------------------------------
    def _new_session(self, cwd, load_id=None, mcp=None):
        from .acp_session import AcpSession, mcp_servers_from_acp
        servers = mcp_servers_from_acp(mcp)
        if cwd is None:
            import os
            cwd = os.getcwd()
        if load_id is not None:
            with self._lock:
                if load_id in self.sessions:
                    raise RpcError(INVALID_PARAMS, f"session already open: {load_id}")
        s = AcpSession(self.peer, cwd, load_id=load_id, engine_argv=self.engine_argv, mcp_servers=servers)
        with self._lock:
            self.sessions[s.id] = s
        s.start()
        return s

    def _session(self, params: dict):
        sid = params.get("sessionId")
        with self._lock:
            s = self.sessions.get(sid)
        if s is None:
            raise RpcError(INVALID_PARAMS, f"unknown session: {sid}")
        return s


def acp_main(argv: list[str]) -> int:
    """CLI entry (``jucode acp [--demo] [--replay FILE] [--approval-mode M]``): serve ACP on stdin/stdout until EOF, then exit without interpreter teardown."""
    from .serve import flush_and_exit
    out = sys.stdout.buffer
    sys.stdout = sys.stderr                       # only the RPC peer writes the protocol stream
    from .heap import single_arena
    single_arena()                                # before any thread exists (see jucode/heap.py)
    server = AcpServer(sys.stdin.buffer, out, engine_argv=argv)
    try:
        server.serve()
    except KeyboardInterrupt:
        pass
    flush_and_exit(0)
    return 0
