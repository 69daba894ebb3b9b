"""Every configured MCP server, its connection state, and what the engine asks of them.

Why this shape: connecting may take seconds (npm servers) or never finish (a broken server),
so construction only starts one background thread per enabled server and returns at once.
Each state change is reported through ``emit`` (the engine's thread-safe inbox): an ``info``
notice, a fresh ``mcp_servers`` view and the internal ``{"type": "_mcp_changed"}`` marker on
which the engine re-emits ``command_list``. A generation number per server makes results of
a superseded connect attempt (after reload/set/remove/close) harmless.
"""

from __future__ import annotations

import atexit
import functools
import logging
import threading
import weakref
from typing import Callable, Optional

from ..events import info
from ..tools.base import GATE_MCP, ToolContext, ToolSpec, text_result
from .client import McpClient, McpError
from .config import McpConfigError, McpServerConfig, parse_servers
from .reconfigure import ConfigChanges
from .render import parse_prompt_args, prompt_args_label, render_prompt, render_tool_result
from .resources import list_resources_result, read_resource_result
from .slots import CHANGED_MARKER, CONNECTED, CONNECTING, DISABLED, FAILED, Slot as _Slot
from .transport import HttpTransport, StdioTransport, TransportError

log = logging.getLogger("jucode.mcp")

LIST_RESOURCES, READ_RESOURCE = "list_resources", "read_resource"

Emit = Callable[[dict], None]


def _tool_name(server: str, tool: str) -> str:
    return f"mcp__{server}__{tool}"


def _schema(tool: dict) -> dict:
    schema = tool.get("inputSchema")
    if not isinstance(schema, dict):
        return {"type": "object"}
    if "type" not in schema:
        schema = {**schema, "type": "object"}
    return schema


def _read_only(tool: dict) -> bool:
    ann = tool.get("annotations")
    return isinstance(ann, dict) and ann.get("readOnlyHint") is True


def _run_spec(run, name: str, args: dict, ctx: ToolContext) -> dict:
    return run(name, args, ctx)


class McpManager(ConfigChanges):
    """Owns one :class:`McpClient` per enabled server. All public methods are thread-safe."""

    def __init__(self, config_servers, cwd: str, emit: Emit,
                 save_config: Optional[Callable[[dict], None]] = None, connect: bool = True,
                 token_store=None):
        """``config_servers``: raw ``mcp_servers`` entries (or parsed configs). Never blocks.

        ``connect=False`` only marks enabled servers ``connecting`` and leaves spawning them to
        :meth:`start`: the engine builds the manager before its startup batch (which must list
        the servers) but spawns children only after that batch is written, so startup never
        competes with a few node processes for the CPU.
        """
        self.cwd = cwd
        self._emit = emit
        self.token_store = token_store           # oauth.McpTokenStore: bearer for HTTP servers
        self.save_config = save_config
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)   # notified whenever a view goes out
        self._emit_lock = threading.Lock()
        self._slots: dict[str, _Slot] = {}
        self._live: set = set()                  # every client not yet closed
        self._closed = False
        raw = list(config_servers or [])
        if all(isinstance(s, McpServerConfig) for s in raw):
            servers, self.config_errors = raw, []
        else:
            servers, self.config_errors = parse_servers(raw)
        for cfg in servers:
            self._slots[cfg.name] = _Slot(config=cfg)
        ref = weakref.ref(self)
        atexit.register(lambda: ref() and ref().close())
        self._started = False
        if connect:
            self.start()
        else:
            for slot in self._slots.values():
                if slot.config.enabled:
                    slot.state = CONNECTING

    def start(self) -> None:
        """Begin connecting every enabled server (once; later calls do nothing)."""
        with self._lock:
            if self._started:
                return
            self._started = True
            slots = [s for s in self._slots.values() if s.config.enabled]
        for slot in slots:
            self._start_connect(slot)

    # ---- connection lifecycle ------------------------------------------------------------

    def _start_connect(self, slot: _Slot) -> None:
        """Mark ``slot`` connecting and connect on a background thread (caller holds no lock)."""
        with self._lock:
            if self._closed:
                return
            slot.generation += 1
            slot.state, slot.error = CONNECTING, ""
            gen = slot.generation
        threading.Thread(target=self._connect, args=(slot, gen),
                         name=f"mcp-connect-{slot.config.name}", daemon=True).start()

    def _current(self, slot: _Slot, gen: int) -> bool:
        return (not self._closed and self._slots.get(slot.config.name) is slot
                and slot.generation == gen)

    def _make_transport(self, cfg: McpServerConfig):
        if cfg.transport == "http":
            auth = None
            if self.token_store is not None:
                auth = functools.partial(self.token_store.bearer, cfg.name, cfg.oauth)
            return HttpTransport(cfg.name, cfg.url, cfg.headers, cfg.timeout_seconds, auth=auth)
        return StdioTransport(cfg.name, cfg.command, cfg.args, cfg.env, self.cwd)

    def _connect(self, slot: _Slot, gen: int) -> None:
        cfg = slot.config
        transport = self._make_transport(cfg)
        client = McpClient(cfg.name, transport, cfg.timeout_seconds, self.cwd,
                           on_change=lambda _kind: self._on_list_changed(slot, gen),
                           on_closed=lambda reason: self._on_lost(slot, gen, reason))
        with self._lock:
            if not self._current(slot, gen):
                return
            slot.client = client
            self._live.add(client)
        try:
            client.connect()
            error = ""
        except (McpError, TransportError) as exc:
            error = str(exc)
            extra = transport.describe_failure()
            if extra and extra not in error and "timed out" in error:
                error = f"{error} ({extra})"
        except Exception as exc:                  # never let a connect thread die silently
            log.exception("MCP server %s: connect crashed", cfg.name)
            error = f"{type(exc).__name__}: {exc}"
        with self._lock:
            current = self._current(slot, gen)
            if current:
                slot.state = FAILED if error else CONNECTED
                slot.error = error
                if error:
                    slot.client = None
        if error or not current:
            self._close_client(client)
        if not current:
            return
        if error:
            self._notify(f"MCP server {cfg.name} failed to connect: {error}")
        else:
            self._notify(f"MCP server {cfg.name} connected ({len(client.tools)} tools)")
            if client.dirty:
                self._on_list_changed(slot, gen)

    def _on_lost(self, slot: _Slot, gen: int, reason: str) -> None:
        """The transport of a connected server ended on its own (crash, EOF)."""
        with self._lock:
            if not self._current(slot, gen) or slot.state != CONNECTED:
                return                              # a connect attempt reports its own failure
            client, slot.client = slot.client, None
            slot.state, slot.error = FAILED, reason
        if client is not None:
            self._close_later(client)
        self._notify(f"MCP server {slot.config.name} failed: {reason}")

    def _on_list_changed(self, slot: _Slot, gen: int) -> None:
        with self._lock:
            if not self._current(slot, gen) or slot.state != CONNECTED or slot.refreshing:
                return
            slot.refreshing = True
        threading.Thread(target=self._refresh, args=(slot, gen), daemon=True,
                         name=f"mcp-refresh-{slot.config.name}").start()

    def _refresh(self, slot: _Slot, gen: int) -> None:
        changed = False
        while True:
            client = slot.client
            try:
                if client is not None and client.refresh_dirty():
                    changed = True
            except McpError as exc:
                log.warning("MCP server %s: refreshing lists failed: %s", slot.config.name, exc)
            with self._lock:
                if client is None or not client.dirty or not self._current(slot, gen):
                    slot.refreshing = False
                    break
        if changed and self._current(slot, gen):
            self._notify(None)

    def _close_later(self, client: McpClient) -> None:
        """Close a replaced client off the caller's thread (a slow server may take ~2 s to
        die); it stays in ``_live`` until closed so :meth:`close` still waits for it."""
        threading.Thread(target=self._close_client, args=(client,), daemon=True,
                         name=f"mcp-close-{client.name}").start()

    def _close_client(self, client: McpClient) -> None:
        try:
            client.close()
        except Exception:
            log.exception("MCP server %s: close failed", client.name)
        with self._lock:
            self._live.discard(client)

    def _notify(self, message: Optional[str]) -> None:
        """Emit an optional notice, then a fresh view and the internal change marker."""
        if self._closed:
            return
        with self._emit_lock:
            if message:
                self._emit(info(message))
            self._emit({"type": "mcp_servers", "servers": self.servers_view()})
            self._emit({"type": CHANGED_MARKER})
        with self._changed:
            self._changed.notify_all()

    # ---- views --------------------------------------------------------------------------

    def servers_view(self) -> list:
        """The ``servers`` list of the ``mcp_servers`` event, in config order."""
        out = []
        with self._lock:
            for name, slot in self._slots.items():
                tools = []
                if slot.state == CONNECTED and slot.client is not None:
                    tools = [{"name": t.get("name", ""), "description": t.get("description") or ""}
                             for t in slot.client.tools]
                entry = {"name": name, "transport": slot.config.transport, "state": slot.state,
                         "tools": tools}
                if slot.state == FAILED and slot.error:
                    entry["error"] = slot.error
                out.append(entry)
        return out

    def wait_settled(self, names, timeout: float) -> bool:
        """Block until none of ``names`` is still connecting (or the manager closed); False on
        timeout. For callers that must not act before a server's tools are known."""
        def settled() -> bool:
            return self._closed or all(self._slots.get(n) is None or self._slots[n].state != CONNECTING
                                       for n in names)
        with self._changed:
            return self._changed.wait_for(settled, timeout)

    def state_of(self, name: str) -> Optional[str]:
        with self._lock:
            slot = self._slots.get(name)
            return slot.state if slot else None

    def summary(self) -> str:
        """One line for ``/doctor``: ``mcp: N servers (a connected, b failed, …)``."""
        counts: dict[str, int] = {}
        with self._lock:
            for slot in self._slots.values():
                counts[slot.state] = counts.get(slot.state, 0) + 1
            total = len(self._slots)
        if not total:
            return "mcp: no servers configured"
        parts = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        return f"mcp: {total} server{'s' if total != 1 else ''} ({parts})"

    # ---- tools ---------------------------------------------------------------------------

    def tool_specs(self, text_results: bool = False) -> list:
        """Tools of every connected server, ``mcp__<server>__<tool>``; duplicates dropped.

        ``text_results``: the specs run through :meth:`run_tool_text` (what the engine offers
        the model) instead of :meth:`run_tool`.
        """
        run = self.run_tool_text if text_results else self.run_tool
        specs: list[ToolSpec] = []
        seen: set[str] = set()
        with self._lock:
            connected = [(n, s.client) for n, s in self._slots.items()
                         if s.state == CONNECTED and s.client is not None]
        for server, client in connected:
            for tool in client.tools:
                tname = tool.get("name")
                if not isinstance(tname, str) or not tname:
                    continue
                full = _tool_name(server, tname)
                if full in seen:
                    continue
                seen.add(full)
                ro = _read_only(tool)
                specs.append(ToolSpec(
                    name=full, description=tool.get("description") or f"MCP tool {tname} ({server})",
                    parameters=_schema(tool), run=functools.partial(_run_spec, run, full),
                    gate=GATE_MCP, parallel_safe=ro, read_only_hint=ro))
            if client.has_resources:
                for extra, spec in self._resource_tool_defs(server, run):
                    if extra not in seen:
                        seen.add(extra)
                        specs.append(spec)
        return specs

    def _resource_tool_defs(self, server: str, run) -> list:
        ls_name, rd_name = _tool_name(server, LIST_RESOURCES), _tool_name(server, READ_RESOURCE)
        return [
            (ls_name, ToolSpec(
                name=ls_name, description=f"List the resources MCP server {server} offers.",
                parameters={"type": "object", "properties": {}},
                run=functools.partial(_run_spec, run, ls_name), gate=GATE_MCP,
                parallel_safe=True, read_only_hint=True)),
            (rd_name, ToolSpec(
                name=rd_name,
                description=f"Read one text resource of MCP server {server} by its listed uri.",
                parameters={"type": "object", "properties": {"uri": {"type": "string"}},
                            "required": ["uri"]},
                run=functools.partial(_run_spec, run, rd_name), gate=GATE_MCP,
                parallel_safe=True, read_only_hint=True)),
        ]

    def read_only_tools(self) -> set:
        return {s.name for s in self.tool_specs() if s.read_only_hint}

    def is_mcp_tool(self, name: str) -> bool:
        return name.startswith("mcp__")


    def _resolve(self, name: str, kind: str = "tool"):
        """(slot, local name) for ``mcp__<server>__<x>``, preferring the longest server name.

        Returns an error string instead when nothing usable matches.
        """
        with self._lock:
            candidates = sorted(self._slots.items(), key=lambda kv: -len(kv[0]))
            not_ready = None
            for server, slot in candidates:
                prefix = f"mcp__{server}__"
                if not name.startswith(prefix) or len(name) == len(prefix):
                    continue
                local = name[len(prefix):]
                if slot.state != CONNECTED or slot.client is None:
                    not_ready = not_ready or f"MCP server {server} is {slot.state}"
                    continue
                client = slot.client
                if kind == "tool":
                    names = {t.get("name") for t in client.tools}
                    if local in names or (client.has_resources
                                          and local in (LIST_RESOURCES, READ_RESOURCE)):
                        return slot, local
                else:
                    if local in {p.get("name") for p in client.prompts}:
                        return slot, local
            if not_ready:
                return not_ready
        return None

    def missing_tool_error(self, name: str) -> dict:
        """Upstream's error for an ``mcp__*`` call the turn has no spec for (its server is not
        connected, or the tool does not exist): ``MCP server <s> is <state>`` or
        ``unknown MCP tool: <n>``, instead of the generic ``unknown tool``."""
        resolved = self._resolve(name)
        if isinstance(resolved, str):
            return {"error": resolved}
        return {"error": f"unknown MCP tool: {name}"}

    def run_tool(self, name: str, args, ctx: Optional[ToolContext] = None) -> dict:
        """Run ``mcp__<server>__<tool>``; returns ``{"output": text}`` or ``{"error": text}``."""
        return self._run(name, args, ctx, text_result=None)

    def run_tool_text(self, name: str, args, ctx: Optional[ToolContext] = None) -> dict:
        """Like :meth:`run_tool`, in the engine's result shape: a real tool's rendered text
        becomes the raw output itself (``tools.base.text_result``, as upstream shows it),
        while the synthetic resource tools and call failures stay JSON objects."""
        return self._run(name, args, ctx, text_result=text_result)

    def _run(self, name: str, args, ctx: Optional[ToolContext], text_result) -> dict:
        resolved = self._resolve(name)
        if resolved is None:
            return {"error": f"unknown MCP tool: {name}"}
        if isinstance(resolved, str):
            return {"error": resolved}
        slot, local = resolved
        client = slot.client
        if args is None or args == "":
            args = {}
        if not isinstance(args, dict):
            return {"error": "MCP tool arguments must be a JSON object"}
        interrupt = ctx.interrupt if ctx is not None else None
        names = {t.get("name") for t in client.tools}
        try:
            if local not in names and local == LIST_RESOURCES:
                return list_resources_result(client)
            if local not in names and local == READ_RESOURCE:
                return read_resource_result(client, args.get("uri"), self.cwd, interrupt)
            result = client.call_tool(local, args, interrupt=interrupt)
        except McpError as exc:
            return {"error": str(exc)}
        text, is_error = render_tool_result(result)
        if text_result is not None:
            return text_result(text, is_error)
        return {"error": text} if is_error else {"output": text}

    # ---- prompts -------------------------------------------------------------------------

    def prompt_commands(self) -> list:
        """``command_list`` rows for every prompt of every connected server (marker ``MCP``)."""
        out = []
        with self._lock:
            connected = [(n, s.client) for n, s in self._slots.items()
                         if s.state == CONNECTED and s.client is not None]
        for server, client in connected:
            for prompt in client.prompts:
                pname = prompt.get("name")
                if isinstance(pname, str) and pname:
                    out.append({"command": f"/{_tool_name(server, pname)}", "marker": "MCP",
                                "args": prompt_args_label(prompt),
                                "description": prompt.get("description") or ""})
        return out

    def is_prompt_command(self, command: str) -> bool:
        return command.lstrip("/").startswith("mcp__")

    def expand_prompt(self, command: str, args_text: str = "") -> str:
        """Render ``/mcp__<server>__<prompt> <json>`` to the user message text.

        Raises :class:`McpError` with a readable message (unknown prompt, bad arguments,
        server not connected, server error or timeout).
        """
        name = command.strip().lstrip("/")
        resolved = self._resolve(name, kind="prompt")
        if resolved is None:
            raise McpError(f"unknown MCP prompt: /{name}")
        if isinstance(resolved, str):
            raise McpError(resolved)
        slot, local = resolved
        client = slot.client
        prompt = next((p for p in client.prompts if p.get("name") == local), {})
        try:
            arguments = parse_prompt_args(prompt, args_text or "")
        except ValueError as exc:
            raise McpError(str(exc)) from None
        return render_prompt(client.get_prompt(local, arguments))

    def close(self) -> None:
        """Disconnect everything; every stdio child (and its process group) is killed."""
        with self._lock:
            self._closed = True
            self._changed.notify_all()
            clients = list(self._live)
            for slot in self._slots.values():
                slot.client = None
        threads = [threading.Thread(target=self._close_client, args=(c,), daemon=True)
                   for c in clients]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=6)


__all__ = ["McpManager", "McpConfigError", "McpError", "CHANGED_MARKER",
           "DISABLED", "CONNECTING", "CONNECTED", "FAILED"]
