"""One ACP session: a real :class:`~jucode.engine.Engine` on its own main-loop thread, and the
translation of its serve events into ACP ``session/update`` notifications.

Nothing here runs turns: prompts become ``user_message`` ops, ``session/cancel`` becomes
``interrupt``, permission answers become ``approve`` ops, all executed on the session's loop
thread through ``engine.call_soon`` exactly as serve executes stdin lines.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from typing import Optional
from urllib.parse import unquote, urlparse

import orjson

from .acp_rpc import INTERNAL_ERROR, INVALID_PARAMS, RpcError

log = logging.getLogger("jucode.acp")

MODES = [
    {"id": "manual", "name": "Manual", "description": "Ask before edits, shell commands and web access"},
    {"id": "plan", "name": "Plan", "description": "Investigate read-only and propose a plan first"},
    {"id": "auto-edit", "name": "Auto-edit", "description": "Edit files freely; ask before shell commands"},
    {"id": "auto", "name": "Auto", "description": "Edits and web freely; shell commands run when the safety "
                                                 "model finds them routine, otherwise ask; ask before MCP tools"},
    {"id": "full-access", "name": "Full access", "description": "Never ask"},
]

PERMISSION_OPTIONS = [
    {"optionId": "allow_once", "name": "Allow", "kind": "allow_once"},
    {"optionId": "allow_always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
]

TOOL_KINDS = {
    "read": "read", "ls": "read", "outline": "read", "ripgrep": "search", "grep": "search", "glob": "search",
    "write": "edit", "str_replace": "edit", "apply_patch": "edit", "hashline_edit": "edit", "edit": "edit",
    "bash": "execute", "exec_command": "execute", "write_stdin": "execute",
    "web_search": "fetch", "web_fetch": "fetch", "update_plan": "think", "propose_plan": "switch_mode",
}

_CHDIR_LOCK = threading.Lock()     # the engine reads the process cwd while it is constructed


def tool_kind(name: str) -> str:
    return TOOL_KINDS.get(name or "", "other")


def tool_title(name: str, args) -> str:
    if isinstance(args, dict):
        for key in ("command", "path", "query", "url", "pattern", "title"):
            v = args.get(key)
            if isinstance(v, str) and v:
                return f"{name}: {v[:120]}"
    return name or "tool"


def prompt_to_message(blocks, cwd: str) -> tuple[str, list]:
    """ACP content blocks → (text, image paths). Links become ``@path`` mentions, embedded
    text resources are inlined, ``file://`` images are attached."""
    if not isinstance(blocks, list):
        raise RpcError(INVALID_PARAMS, "prompt must be an array of content blocks")
    parts: list[str] = []
    images: list[str] = []
    for b in blocks:
        if not isinstance(b, dict):
            raise RpcError(INVALID_PARAMS, "invalid content block")
        t = b.get("type")
        if t == "text":
            parts.append(str(b.get("text", "")))
        elif t == "image":
            path = _file_path(b.get("uri"))
            if path:
                images.append(path)
        elif t == "resource_link":
            path = _file_path(b.get("uri"))
            parts.append(f"@{path}" if path else str(b.get("uri", "")))
        elif t == "resource":
            res = b.get("resource") or {}
            if isinstance(res.get("text"), str):
                parts.append(f"<resource uri=\"{res.get('uri', '')}\">\n{res['text']}\n</resource>")
    return "\n".join(p for p in parts if p), images


def mcp_servers_from_acp(servers) -> list:
    """ACP ``mcpServers`` (session/new, session/load) → our ``mcp_servers`` entries.

    stdio ``{name, command, args, env:[{name, value}]}`` and ``{type:"http", name, url,
    headers:[{name, value}]}`` map onto the two transports we speak. ``sse`` (which we don't
    advertise) is skipped with a log line rather than failing the editor's whole session.
    """
    if servers is None:
        return []
    if not isinstance(servers, list):
        raise RpcError(INVALID_PARAMS, "mcpServers must be an array")
    out = []
    for s in servers:
        if not isinstance(s, dict) or not isinstance(s.get("name"), str) or not s["name"]:
            raise RpcError(INVALID_PARAMS, "each MCP server needs a name")
        kind = s.get("type") or "stdio"
        if kind == "stdio":
            if not isinstance(s.get("command"), str) or not s["command"]:
                raise RpcError(INVALID_PARAMS, f"MCP server {s['name']} needs a command")
            out.append({"name": s["name"], "command": s["command"], "args": _strings(s, "args"),
                        "env": _pairs(s, "env")})
        elif kind == "http":
            if not isinstance(s.get("url"), str) or not s["url"]:
                raise RpcError(INVALID_PARAMS, f"MCP server {s['name']} needs a url")
            out.append({"name": s["name"], "url": s["url"], "headers": _pairs(s, "headers")})
        else:
            log.warning("skipping MCP server %s: transport %r is not supported", s["name"], kind)
    return out


def _strings(s: dict, key: str) -> list:
    v = s.get(key) or []
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise RpcError(INVALID_PARAMS, f"MCP server {s['name']}: {key} must be an array of strings")
    return list(v)


def _pairs(s: dict, key: str) -> dict:
    v = s.get(key) or []
    if not isinstance(v, list) or not all(isinstance(p, dict) and isinstance(p.get("name"), str)
                                          and isinstance(p.get("value"), str) for p in v):
        raise RpcError(INVALID_PARAMS, f"MCP server {s['name']}: {key} must be an array of {{name, value}}")
    return {p["name"]: p["value"] for p in v}


def _file_path(uri) -> Optional[str]:
    if not isinstance(uri, str) or not uri.startswith("file://"):
        return None
    return unquote(urlparse(uri).path)


class AcpSession:
    def __init__(self, peer, cwd: str, load_id: Optional[str] = None, engine_argv=(), mcp_servers=()):
        from .engine import Engine, EngineOptions
        self.peer = peer
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()
        if not isinstance(cwd, str) or not os.path.isdir(cwd):
            raise RpcError(INVALID_PARAMS, f"cwd is not a directory: {cwd}")
        with _CHDIR_LOCK:
            old = os.getcwd()
            os.chdir(cwd)
            try:
                opts = EngineOptions.from_argv(list(engine_argv))
                opts.mcp_servers = list(mcp_servers)
                self.engine = Engine(opts, self.inbox)
            finally:
                os.chdir(old)
        if load_id is not None:
            self._open_journal(load_id)
        self.id = self.engine.session_id
        self.pending_prompt = None          # JSON-RPC id of the running session/prompt
        self.cancelled = False
        self.turn_error: Optional[str] = None
        self.announced: set = set()         # call ids already sent as tool_call
        self.engine.attach_writer(self._on_event)
        self.thread = threading.Thread(target=self._loop, name=f"acp-{self.id}", daemon=True)
        self._started = threading.Event()

    def start(self) -> None:
        self.thread.start()

    def _loop(self) -> None:
        from .serve import run_loop
        try:
            self.engine.emit_startup()
            run_loop(self.engine, self.inbox)
        except Exception:
            log.exception("acp session loop failed")
        finally:
            try:
                self.engine.shutdown()
            except Exception:
                log.exception("acp session shutdown failed")
            self._finish_prompt()

    def _open_journal(self, session_id: str) -> None:
        from .session.journal import SessionStore
        try:
            store = SessionStore.open(str(self.engine.profile), self.engine.cwd, session_id)
        except Exception as e:
            self.engine.shutdown()
            raise RpcError(INVALID_PARAMS, str(e)) from None
        self.engine.sessions.store = store
        self.engine.sessions.session_id = session_id

    # -- main-loop access --------------------------------------------------------------------------
    def call(self, fn, timeout: float = 10.0):
        """Run ``fn`` on the session's loop thread and wait for its result."""
        done = threading.Event()
        box: dict = {}

        def wrapper():
            try:
                box["v"] = fn()
            except BaseException as e:
                box["e"] = e
            finally:
                done.set()
        self.engine.call_soon(wrapper)
        if not done.wait(timeout):
            raise RpcError(INTERNAL_ERROR, "session is not responding")
        if "e" in box:
            raise box["e"]
        return box.get("v")

    def modes(self) -> dict:
        return {"currentModeId": self.engine.live.mode, "availableModes": MODES}

    def wait_for_mcp(self, timeout: float) -> None:
        """Block (a helper thread, never the RPC reader) until the editor's own MCP servers have
        connected or failed, at most ``timeout`` s. Why: an editor sends its first prompt right
        after session/new, and a turn only offers the tools of servers connected when it starts."""
        names = [e["name"] for e in self.engine.opts.mcp_servers]
        host = self.engine.ext.host("McpHost")
        if names and host is not None:
            host.manager.wait_settled(names, timeout)

    # -- requests ------------------------------------------------------------------------------------
    def prompt(self, req_id, blocks) -> None:
        text, images = prompt_to_message(blocks, self.engine.cwd)
        if self.pending_prompt is not None:
            raise RpcError(INVALID_PARAMS, "a prompt is already running in this session")
        self.pending_prompt = req_id
        self.cancelled = False
        self.turn_error = None
        op = {"op": "user_message", "content": text, "images": images}
        self.engine.call_soon(lambda: self.engine.handle_line(orjson.dumps(op)))

    def cancel(self) -> None:
        def do():
            if self.pending_prompt is None:
                return
            self.cancelled = True
            if not self.engine.interrupt():
                self._finish_prompt()
        self.engine.call_soon(do)

    def set_mode(self, mode_id) -> None:
        from .approvals import ModeError, parse_mode
        try:
            parse_mode(mode_id)
        except ModeError as e:
            raise RpcError(INVALID_PARAMS, str(e)) from None
        self.call(lambda: self.engine.set_mode(mode_id))

    def replay_history(self) -> None:
        """session/load: the journal's active branch as session/update notifications."""
        def items():
            from .session.transcript import transcript_items
            store = self.engine.sessions.store
            return transcript_items(store.active_path()) if store is not None else []
        for i, item in enumerate(self.call(items)):
            role = item.get("role")
            if role == "user":
                self._update({"sessionUpdate": "user_message_chunk", "content": _text(item.get("content", ""))})
            elif role == "assistant":
                self._update({"sessionUpdate": "agent_message_chunk", "content": _text(item.get("content", ""))})
            elif role == "tool":
                cid = str(item.get("call_id") or f"history_{i}")
                name = str(item.get("name") or "tool")
                self._update({"sessionUpdate": "tool_call", "toolCallId": cid, "title": name,
                              "kind": tool_kind(name), "status": "completed",
                              "content": [_content(str(item.get("output", "")))]})
            elif role == "plan":
                self._update({"sessionUpdate": "agent_message_chunk",
                              "content": _text(f"Plan: {item.get('title', '')}\n\n{item.get('content', '')}")})

    def close(self) -> None:
        self.engine.call_soon(self.engine.request_exit)

    # -- engine events → ACP (loop thread) ---------------------------------------------------------------
    def _update(self, update: dict) -> None:
        self.peer.notify("session/update", {"sessionId": self.id, "update": update})

    def _on_event(self, ev: dict) -> None:
        t = ev.get("type")
        if t == "assistant_delta":
            self._update({"sessionUpdate": "agent_message_chunk", "content": _text(ev.get("delta", ""))})
        elif t == "reasoning_delta":
            self._update({"sessionUpdate": "agent_thought_chunk", "content": _text(ev.get("delta", ""))})
        elif t == "tool_start":
            self._tool_started(ev)
        elif t == "tool_update":
            self._update({"sessionUpdate": "tool_call_update", "toolCallId": ev.get("call_id"),
                          "status": "in_progress", "content": [_content(_out(ev.get("output")))]})
        elif t == "tool_output":
            out = _out(ev.get("output"))
            self._update({"sessionUpdate": "tool_call_update", "toolCallId": ev.get("call_id"),
                          "status": "failed" if ev.get("is_error") else "completed",
                          "content": [_content(out)], "rawOutput": {"output": out}})
        elif t == "plan":
            entries = [{"content": str(s.get("step", "")), "priority": "medium",
                        "status": s.get("status") if s.get("status") in ("pending", "in_progress", "completed")
                        else "pending"} for s in (ev.get("plan") or []) if isinstance(s, dict)]
            self._update({"sessionUpdate": "plan", "entries": entries})
        elif t == "proposed_plan" and ev.get("status") == "pending":
            self._update({"sessionUpdate": "agent_message_chunk",
                          "content": _text(f"\n\n**Proposed plan: {ev.get('title', '')}**\n\n{ev.get('markdown', '')}")})
        elif t == "approval_mode":
            self._update({"sessionUpdate": "current_mode_update", "currentModeId": ev.get("mode")})
        elif t == "approval_request":
            self._ask_permission(ev)
        elif t == "error":
            if self.pending_prompt is not None:
                self.turn_error = str(ev.get("message"))
        elif t == "status" and ev.get("message") in ("ready", "interrupted"):
            if ev.get("message") == "interrupted":
                self.cancelled = True
            self._finish_prompt()

    def _tool_started(self, ev: dict) -> None:
        cid = ev.get("call_id")
        args = _args(ev.get("arguments"))
        if cid in self.announced:
            self._update({"sessionUpdate": "tool_call_update", "toolCallId": cid, "status": "in_progress"})
            return
        self.announced.add(cid)
        upd = {"sessionUpdate": "tool_call", "toolCallId": cid, "title": tool_title(ev.get("name"), args),
               "kind": tool_kind(ev.get("name")), "status": "in_progress"}
        if args is not None:
            upd["rawInput"] = args
        self._update(upd)

    def _ask_permission(self, ev: dict) -> None:
        cid = ev.get("call_id")
        name = ev.get("name") or "tool"
        title = f"{name}: {ev.get('summary')}" if ev.get("summary") else name
        tool_call = {"toolCallId": cid, "title": title[:200], "kind": tool_kind(name), "status": "pending"}
        if cid not in self.announced:
            self.announced.add(cid)
            self._update(dict({"sessionUpdate": "tool_call"}, **tool_call))
        engine = self.engine

        def answered(result, error):
            decision, always = "deny", False
            outcome = (result or {}).get("outcome") if isinstance(result, dict) else None
            if isinstance(outcome, dict) and outcome.get("outcome") == "selected":
                opt = outcome.get("optionId")
                if opt in ("allow_once", "allow_always"):
                    decision, always = "allow", opt == "allow_always"
            op = {"op": "approve", "call_id": cid, "decision": decision}
            if always:
                op["always"] = True

            def apply():
                if cid in engine.approvals:
                    engine.approve(op)
            engine.call_soon(apply)
        self.peer.request("session/request_permission",
                          {"sessionId": self.id, "toolCall": tool_call, "options": PERMISSION_OPTIONS}, answered)

    def _finish_prompt(self) -> None:
        rid, self.pending_prompt = self.pending_prompt, None
        if rid is None:
            return
        self.announced.clear()
        if self.cancelled:
            self.peer.respond(rid, {"stopReason": "cancelled"})
        elif self.turn_error:
            self.peer.respond_error(rid, INTERNAL_ERROR, self.turn_error)
        else:
            self.peer.respond(rid, {"stopReason": "end_turn"})


def _text(s) -> dict:
    return {"type": "text", "text": str(s)}


def _content(s: str) -> dict:
    return {"type": "content", "content": _text(s)}


def _out(v) -> str:
    if isinstance(v, str):
        return v
    try:
        return orjson.dumps(v).decode()
    except TypeError:
        return str(v)


def _args(v):
    if isinstance(v, str):
        try:
            return orjson.loads(v)
        except orjson.JSONDecodeError:
            return {"raw": v}
    return v
