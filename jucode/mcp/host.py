"""The engine's MCP host: plugs :class:`McpManager` into the serve engine through the hub hooks.

Why a separate host: the manager knows nothing about the engine (it only gets a thread-safe
``emit``), which keeps it testable on its own. This module does the engine-facing glue:
the startup view, tools per turn, prompt commands, ``/mcp``, the four MCP ops with config
persistence, ``/doctor`` and killing every child at shutdown.

Threading: the manager's connect threads report through ``engine.post`` (the main loop's
inbox), so ``mcp_servers``/``info`` events and the ``_mcp_changed`` marker are handled on the
main thread. Prompt expansion (``prompts/get``, up to the server's timeout) runs on a pool
worker and posts ``_mcp_prompt`` back; the main loop never waits on a server.
"""

from __future__ import annotations

import logging
from typing import Optional

from ..commands import Command, command
from ..messages import QueuedMessage
from .client import McpError
from .manager import CHANGED_MARKER, McpManager
from .oauth import McpTokenStore
from .slash import mcp_slash_command

log = logging.getLogger("jucode.mcp")

PROMPT_MARKER = "_mcp_prompt"
MCP_OPS = ("mcp_list", "mcp_set", "mcp_remove", "mcp_toggle")


class McpHost:
    """One per engine. Construction is cheap: servers are only marked ``connecting`` here and
    spawned in :meth:`after_startup`, after the startup batch is written."""

    def __init__(self, engine):
        self.engine = engine
        self._session_servers = list(getattr(getattr(engine, "opts", None), "mcp_servers", None) or [])
        self.manager = McpManager(self._with_session_servers(engine.config.get("mcp_servers")), engine.cwd, engine.post,
                                  save_config=self.save_config, connect=False,
                                  token_store=_token_store(engine))
        self._config_version = engine.config.version
        self._config_errors = list(self.manager.config_errors)

    def _with_session_servers(self, config_servers) -> list:
        """config.json's servers plus this session's own (an ACP editor's), which replace a
        config entry of the same name and are never written back to config.json."""
        entries = list(config_servers) if isinstance(config_servers, list) else []
        if not self._session_servers:
            return entries
        names = {e.get("name") for e in self._session_servers if isinstance(e, dict)}
        return [e for e in entries if not (isinstance(e, dict) and e.get("name") in names)] + self._session_servers

    # -- startup ---------------------------------------------------------------------------
    def servers_view(self) -> list:
        return self.manager.servers_view()

    def startup_events(self) -> list:
        """Invalid ``mcp_servers`` entries are skipped; say why once, in the startup batch."""
        return [{"type": "error", "message": msg} for msg in self.manager.config_errors]

    def after_startup(self) -> None:
        self.manager.start()

    # -- live config -----------------------------------------------------------------------
    def tick(self) -> None:
        """Follow config.json edits: the project watcher reloads ``engine.config`` in place and
        bumps its version; an unchanged version costs one comparison per tick."""
        version = self.engine.config.version
        if version == self._config_version:
            return
        self._config_version = version
        self.sync_config()

    def sync_config(self) -> None:
        """Apply the current ``mcp_servers`` to the manager (only changed servers are touched;
        its own ``mcp_servers`` view and ``_mcp_changed`` marker follow when anything did).
        New invalid entries are reported once, not on every later reload."""
        entries = self._with_session_servers(self.engine.config.get("mcp_servers"))
        _, errors = self.manager.apply_config(entries)
        fresh = [e for e in errors if e not in self._config_errors]
        self._config_errors = list(errors)
        for msg in fresh:
            self.engine.emit({"type": "error", "message": msg})

    # -- turns -----------------------------------------------------------------------------
    def tool_specs(self) -> list:
        return self.manager.tool_specs(text_results=True)

    def turn_extra(self, extra: dict) -> None:
        extra["mcp"] = self.manager
        extra.setdefault("missing_tool_errors", []).append(self.missing_tool_error)

    def missing_tool_error(self, name: str):
        """For an mcp__* call the turn has no spec for (its server went away): upstream's MCP
        error instead of a generic unknown tool. Called on workers; the manager is thread-safe."""
        return self.manager.missing_tool_error(name) if name.startswith("mcp__") else None

    # -- prompt commands -------------------------------------------------------------------
    def commands(self) -> list:
        out = []
        for row in self.manager.prompt_commands():
            name = row["command"]
            out.append(Command(name, row["args"], row["description"], self._prompt_handler(name),
                               "MCP", source="mcp"))
        return out

    def _prompt_handler(self, name: str):
        def handler(engine, args_text: str) -> None:
            self.expand_and_submit(name, args_text)
        return handler

    def expand_and_submit(self, name: str, args_text: str) -> None:
        """Main thread: expand ``/mcp__s__p <json>`` on a worker; the result comes back as
        ``_mcp_prompt`` and is submitted like any user message (queued while a turn runs)."""
        engine, manager = self.engine, self.manager
        typed = f"{name} {args_text.strip()}".strip()

        def job() -> None:
            try:
                text = manager.expand_prompt(name, args_text)
            except McpError as exc:
                engine.post({"type": "error", "message": str(exc)})
                return
            except Exception as exc:          # a worker must never die silently
                log.exception("MCP prompt %s failed", name)
                engine.post({"type": "error", "message": f"MCP prompt {name} failed: {exc}"})
                return
            engine.post({"type": PROMPT_MARKER, "content": typed, "text": text})

        engine.pool.submit(job, name="mcp-prompt")

    # -- main-loop messages ------------------------------------------------------------------
    def internal(self, msg: dict) -> bool:
        kind = msg.get("type")
        if kind == CHANGED_MARKER:
            self.engine.refresh_commands()
            return True
        if kind == PROMPT_MARKER:
            self.engine.submit(QueuedMessage(content=msg["content"], model_text=msg["text"],
                                             kind="command"))
            return True
        return False

    # -- ops and /mcp ------------------------------------------------------------------------
    def save_config(self, new_config: dict) -> None:
        """Persist ``mcp_servers`` atomically (Config.save keeps every other key, known or
        not); on failure the in-memory config is left as it was and the error propagates."""
        cfg = self.engine.config
        missing = object()
        old = cfg.data.get("mcp_servers", missing)
        try:
            cfg.update(mcp_servers=new_config.get("mcp_servers", []))
        except Exception:
            if old is missing:
                cfg.data.pop("mcp_servers", None)
            else:
                cfg.data["mcp_servers"] = old
            raise

    def _config_view(self) -> dict:
        data = dict(self.engine.config.data)
        if not isinstance(data.get("mcp_servers"), list):
            data["mcp_servers"] = []
        return data

    def handle_op(self, engine, op: dict) -> None:
        for ev in self.manager.handle_op(op, self._config_view(), self.save_config):
            engine.emit(ev)

    def ops(self) -> dict:
        return {name: self.handle_op for name in MCP_OPS}

    def slash(self, args_text: str) -> None:
        for ev in mcp_slash_command(self.manager, args_text, self._config_view(), self.save_config):
            self.engine.emit(ev)

    # -- diagnostics and shutdown -------------------------------------------------------------
    def doctor_lines(self) -> list:
        return [self.manager.summary()]

    def close(self) -> None:
        self.manager.close()


def _token_store(engine) -> Optional[McpTokenStore]:
    """HTTP servers' OAuth tokens live in the profile's auth.json (no profile: no tokens)."""
    profile = getattr(engine, "profile", None)
    return McpTokenStore(profile) if profile is not None else None


def _host(engine) -> Optional[McpHost]:
    return engine.ext.host("McpHost")


@command("/mcp", args="[tools|reload|enable|disable] [server]",
         description="List, reload, enable or disable MCP servers")
def _mcp_command(engine, args: str) -> None:
    host = _host(engine)
    if host is None:
        engine.emit({"type": "error", "message": "MCP is not available"})
        return
    host.slash(args)
