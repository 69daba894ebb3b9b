"""MCP server entries of config.json: validation and the mcp_set/mcp_remove/mcp_toggle edits.

Why a module of its own: the same validation runs when config.json is loaded (bad entries
are reported and skipped) and when a client sends ``mcp_set``, and the protocol-visible
error texts must be upstream's exactly. Nothing here touches disk or processes: the engine
persists the returned config and tells the manager what changed.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Optional

NAME_RE = re.compile(r"^[A-Za-z0-9_-]+$")
DEFAULT_TIMEOUT_SECONDS = 60
MIN_TIMEOUT_SECONDS = 1
MAX_TIMEOUT_SECONDS = 3600


class McpConfigError(ValueError):
    """A config entry or an mcp_* op is invalid; ``str(e)`` is the protocol-visible text."""


@dataclass
class McpServerConfig:
    """One validated ``mcp_servers[]`` entry."""

    name: str
    transport: str = "stdio"                   # "stdio" | "http"
    command: str = ""
    args: list = field(default_factory=list)
    env: dict = field(default_factory=dict)
    url: str = ""
    headers: dict = field(default_factory=dict)
    oauth: Optional[dict] = None               # {client_id, token_url, scope}
    enabled: bool = True
    timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS

    def to_dict(self) -> dict:
        """The entry as config.json stores it (normalized)."""
        out = {"name": self.name, "transport": self.transport}
        if self.transport == "stdio":
            out["command"] = self.command
            out["args"] = list(self.args)
            out["env"] = dict(self.env)
        else:
            out["url"] = self.url
            out["headers"] = dict(self.headers)
            if self.oauth is not None:
                out["oauth"] = dict(self.oauth)
        out["enabled"] = self.enabled
        out["timeout_seconds"] = self.timeout_seconds
        return out


def _string_list(name: str, key: str, value) -> list:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise McpConfigError(f"MCP server {name}: {key} must be an array of strings")
    return list(value)


def _string_map(name: str, key: str, value) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise McpConfigError(f"MCP server {name}: {key} must be an object of strings")
    return dict(value)


def _timeout(name: str, value) -> int:
    if value is None:
        return DEFAULT_TIMEOUT_SECONDS
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise McpConfigError(f"MCP server {name}: timeout_seconds must be a number")
    return int(min(max(int(value), MIN_TIMEOUT_SECONDS), MAX_TIMEOUT_SECONDS))


def parse_server(entry) -> McpServerConfig:
    """Validate one raw entry; raises :class:`McpConfigError` with upstream's text."""
    if not isinstance(entry, dict):
        raise McpConfigError("MCP server entry must be an object")
    name = entry.get("name")
    if not isinstance(name, str) or not NAME_RE.match(name):
        shown = name if isinstance(name, str) else ("" if name is None else str(name))
        raise McpConfigError(f"invalid MCP server name '{shown}': use letters, digits, '_' or '-'")
    transport = entry.get("transport") or ""
    if not isinstance(transport, str):
        transport = str(transport)
    transport = transport or "stdio"
    if transport not in ("stdio", "http"):
        raise McpConfigError(f"unknown MCP transport '{transport}': use stdio or http")
    command = entry.get("command") or ""
    url = entry.get("url") or ""
    if not isinstance(command, str) or not isinstance(url, str):
        raise McpConfigError(f"MCP server {name}: command and url must be strings")
    if transport == "stdio" and not command.strip():
        raise McpConfigError(f"MCP server {name}: stdio transport requires command")
    if transport == "http" and not url.strip():
        raise McpConfigError(f"MCP server {name}: http transport requires url")
    oauth = entry.get("oauth")
    if oauth is not None:
        if not isinstance(oauth, dict):
            raise McpConfigError(f"MCP server {name}: oauth must be an object")
        if transport != "http":
            raise McpConfigError(f"MCP server {name}: oauth requires http transport")
        if bool(oauth.get("client_id")) != bool(oauth.get("token_url")):
            raise McpConfigError("MCP oauth client_id and token_url must be set together")
    enabled = entry.get("enabled", True)
    if not isinstance(enabled, bool):
        raise McpConfigError(f"MCP server {name}: enabled must be true or false")
    return McpServerConfig(
        name=name, transport=transport, command=command, url=url,
        args=_string_list(name, "args", entry.get("args")),
        env=_string_map(name, "env", entry.get("env")),
        headers=_string_map(name, "headers", entry.get("headers")),
        oauth=dict(oauth) if isinstance(oauth, dict) else None,
        enabled=enabled, timeout_seconds=_timeout(name, entry.get("timeout_seconds")),
    )


def parse_servers(entries) -> tuple[list[McpServerConfig], list[str]]:
    """Validate config.json's ``mcp_servers``: (valid servers in order, error texts).

    Invalid entries are reported and skipped; a repeated name keeps the first entry.
    """
    servers: list[McpServerConfig] = []
    errors: list[str] = []
    if entries is None:
        return servers, errors
    if not isinstance(entries, list):
        return servers, ["invalid mcp_servers in config.json: expected an array"]
    seen: set[str] = set()
    for raw in entries:
        try:
            cfg = parse_server(raw)
        except McpConfigError as exc:
            errors.append(str(exc))
            continue
        if cfg.name in seen:
            continue
        seen.add(cfg.name)
        servers.append(cfg)
    return servers, errors


@dataclass
class McpOpResult:
    """Outcome of validating an mcp_* op against the current config.

    ``error`` set → emit it and change nothing. Otherwise persist ``config`` and apply
    ``action`` ("set" | "remove" | "toggle") for ``name`` (and ``server`` for "set",
    ``enabled`` for "toggle") to the manager.
    """

    error: Optional[str] = None
    config: Optional[dict] = None
    action: str = ""
    name: str = ""
    server: Optional[McpServerConfig] = None
    enabled: Optional[bool] = None


def _entries(config: dict) -> list:
    raw = config.get("mcp_servers")
    return list(raw) if isinstance(raw, list) else []


def _index_of(entries: list, name: str) -> int:
    for i, entry in enumerate(entries):
        if isinstance(entry, dict) and entry.get("name") == name:
            return i
    return -1


def apply_mcp_op(config: dict, op: dict) -> McpOpResult:
    """Validate an ``mcp_set`` / ``mcp_remove`` / ``mcp_toggle`` op; never mutates ``config``."""
    kind = op.get("op", "")
    new_config = copy.deepcopy(config) if isinstance(config, dict) else {}
    entries = _entries(new_config)
    if kind == "mcp_set":
        raw = op.get("server")
        if not isinstance(raw, dict):
            return McpOpResult(error="mcp_set requires a server object")
        try:
            server = parse_server(raw)
        except McpConfigError as exc:
            return McpOpResult(error=str(exc))
        stored = dict(raw)                     # unknown keys of the entry are kept
        stored.update(server.to_dict())
        i = _index_of(entries, server.name)
        if i >= 0:
            entries[i] = stored
        else:
            entries.append(stored)
        new_config["mcp_servers"] = entries
        return McpOpResult(config=new_config, action="set", name=server.name, server=server)
    if kind == "mcp_remove":
        name = op.get("name")
        if not isinstance(name, str) or not name.strip():
            return McpOpResult(error="mcp_remove requires name")
        i = _index_of(entries, name)
        if i < 0:
            return McpOpResult(error=f"unknown MCP server: {name}")
        del entries[i]
        new_config["mcp_servers"] = entries
        return McpOpResult(config=new_config, action="remove", name=name)
    if kind == "mcp_toggle":
        name = op.get("name")
        enabled = op.get("enabled")
        if not isinstance(name, str) or not name.strip() or not isinstance(enabled, bool):
            return McpOpResult(error="mcp_toggle requires name and enabled")
        i = _index_of(entries, name)
        if i < 0:
            return McpOpResult(error=f"unknown MCP server: {name}")
        entry = dict(entries[i])
        entry["enabled"] = enabled
        entries[i] = entry
        new_config["mcp_servers"] = entries
        return McpOpResult(config=new_config, action="toggle", name=name, enabled=enabled)
    return McpOpResult(error=f"unknown op: {kind}")
