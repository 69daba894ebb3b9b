"""Changing the set of MCP servers while running: the mcp_* ops, ``/mcp`` toggles and reloads,
and following config.json when it is edited by hand.

Why a mixin of :class:`~.manager.McpManager`: these methods only rearrange slots and start or
close connections through the manager's own primitives (``_start_connect``, ``_close_later``,
``_notify``); keeping them apart keeps each module short. Every method is thread-safe.
"""

from __future__ import annotations

from typing import Callable, Optional

from ..events import status
from .client import McpError
from .config import McpServerConfig, apply_mcp_op, parse_server, parse_servers
from .slots import CONNECTING, DISABLED, FAILED, Slot as _Slot, same_but_enabled as _same_but_enabled


class ConfigChanges:
    """Mixed into McpManager; relies on its ``_lock``, ``_slots``, ``_started``, ``_closed``."""

    def set_server(self, entry) -> None:
        """Add or replace a server (raw entry or parsed config) and (re)connect it."""
        cfg = entry if isinstance(entry, McpServerConfig) else parse_server(entry)
        with self._lock:
            old = self._slots.get(cfg.name)
            slot = _Slot(config=cfg, generation=(old.generation + 1) if old else 0)
            self._slots[cfg.name] = slot       # keeps the old position when replacing
            old_client = old.client if old else None
            if old:
                old.client = None
        if old_client is not None:
            self._close_later(old_client)
        if cfg.enabled:
            self._start_connect(slot)
        self._notify(None)

    def remove(self, name: str) -> bool:
        with self._lock:
            slot = self._slots.pop(name, None)
            client = slot.client if slot else None
            if slot:
                slot.client = None
        if slot is None:
            return False
        if client is not None:
            self._close_later(client)
        self._notify(None)
        return True

    def toggle(self, name: str, enabled: bool) -> bool:
        with self._lock:
            slot = self._slots.get(name)
            if slot is None:
                return False
            slot.config.enabled = enabled
            client = None
            if not enabled:
                slot.generation += 1
                client, slot.client = slot.client, None
                slot.state, slot.error = DISABLED, ""
        if client is not None:
            self._close_later(client)
        if enabled and slot.state in (DISABLED, FAILED):
            self._start_connect(slot)
        self._notify(None)
        return True

    def reload(self, name: Optional[str] = None) -> list:
        """Reconnect one enabled server (or all); returns the names being reconnected."""
        with self._lock:
            if name is not None and name not in self._slots:
                raise McpError(f"unknown MCP server: {name}")
            slots = [s for n, s in self._slots.items()
                     if (name is None or n == name) and s.config.enabled]
            old = []
            for slot in slots:
                slot.generation += 1
                if slot.client is not None:
                    old.append(slot.client)
                    slot.client = None
                slot.state = CONNECTING
        for client in old:
            self._close_later(client)
        for slot in slots:
            self._start_connect(slot)
        if slots:
            self._notify(None)
        return [s.config.name for s in slots]

    def apply_config(self, config_servers) -> tuple[list, list]:
        """Follow a new ``mcp_servers`` list (config.json edited while running).

        Only servers whose normalized entry changed are touched: new ones are added and
        connected, missing ones removed (their process group killed), an entry differing
        only in ``enabled`` is toggled, any other difference restarts that server. Slots
        end up in the config's order. Returns (changed names, config error texts); a
        ``mcp_servers`` view is emitted only when something changed.
        """
        servers, errors = parse_servers(config_servers)
        changed: list = []
        to_close: list = []
        to_connect: list = []
        with self._lock:
            if self._closed:
                return [], errors
            old = self._slots
            slots: dict = {}
            for cfg in servers:
                slot = old.get(cfg.name)
                if slot is not None and slot.config == cfg:
                    slots[cfg.name] = slot
                    continue
                changed.append(cfg.name)
                if slot is not None and _same_but_enabled(slot.config, cfg):
                    slot.config = cfg              # a toggle: keep the slot
                    slot.generation += 1
                    if slot.client is not None:
                        to_close.append(slot.client)
                        slot.client = None
                    slot.state, slot.error = DISABLED, ""
                else:                              # new, or anything else changed: restart
                    if slot is not None and slot.client is not None:
                        to_close.append(slot.client)
                        slot.client = None
                    slot = _Slot(config=cfg, generation=(slot.generation + 1) if slot else 0)
                if cfg.enabled:
                    slot.state = CONNECTING
                    to_connect.append(slot)
                slots[cfg.name] = slot
            for name, slot in old.items():
                if name not in slots:
                    changed.append(name)
                    slot.generation += 1
                    if slot.client is not None:
                        to_close.append(slot.client)
                        slot.client = None
            reordered = list(slots) != [n for n in old if n in slots]
            self._slots = slots
            started = self._started
        for client in to_close:
            self._close_later(client)
        if started:
            for slot in to_connect:
                self._start_connect(slot)
        if changed or reordered:
            self._notify(None)
        return changed, errors

    def handle_op(self, op: dict, config: dict,
                  save: Optional[Callable[[dict], None]] = None) -> list:
        """Serve's ``mcp_list``/``mcp_set``/``mcp_remove``/``mcp_toggle``: events to emit.

        ``save(new_config)`` persists config.json (atomically, by the engine); if it raises,
        nothing changes and ``failed to save config: <e>`` is returned.
        """
        if op.get("op") == "mcp_list":
            return [{"type": "mcp_servers", "servers": self.servers_view()}]
        result = apply_mcp_op(config, op)
        if result.error:
            return [{"type": "error", "message": result.error}]
        save = save or self.save_config
        if save is not None:
            try:
                save(result.config)
            except Exception as exc:
                return [{"type": "error", "message": f"failed to save config: {exc}"}]
        events: list = []
        if result.action == "set":
            self.set_server(result.server)
        elif result.action == "remove":
            self.remove(result.name)
        elif result.action == "toggle":
            self.toggle(result.name, bool(result.enabled))
            events.append(status(f"MCP server {result.name} "
                                 f"{'enabled' if result.enabled else 'disabled'}"))
        events.append({"type": "mcp_servers", "servers": self.servers_view()})
        return events
