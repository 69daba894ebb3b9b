"""The ``/mcp [tools|reload|enable|disable] [server]`` slash command.

Kept next to the manager (rather than in the command registry) because every branch is a
thin view over manager state; the registry only has to route ``/mcp`` here.
"""

from __future__ import annotations

from typing import Callable, Optional

from ..events import error, info, status
from .client import McpError

USAGE = "usage: /mcp [tools|reload|enable|disable] [server]"


def _listing(manager) -> str:
    view = manager.servers_view()
    if not view:
        return "no MCP servers configured (add entries to mcp_servers in config.json)"
    lines = ["MCP servers:"]
    for s in view:
        line = f"  {s['name']} ({s['transport']}): {s['state']}"
        if s["state"] == "connected":
            line += f", {len(s['tools'])} tools"
        if s.get("error"):
            line += f" — {s['error']}"
        lines.append(line)
    return "\n".join(lines)


def _tools(manager, server: Optional[str]) -> list:
    view = manager.servers_view()
    if server is not None and server not in {s["name"] for s in view}:
        return [error(f"unknown MCP server: {server}")]
    lines = []
    for s in view:
        if server is not None and s["name"] != server:
            continue
        if s["state"] != "connected":
            lines.append(f"{s['name']}: {s['state']}")
            continue
        lines.append(f"{s['name']}:")
        for t in s["tools"]:
            desc = (t.get("description") or "").splitlines()[0] if t.get("description") else ""
            lines.append(f"  mcp__{s['name']}__{t['name']}" + (f" — {desc}" if desc else ""))
    return [info("\n".join(lines) if lines else "no MCP servers configured")]


def mcp_slash_command(manager, args_text: str, config: dict,
                      save: Optional[Callable[[dict], None]] = None) -> list:
    """Events for ``/mcp <args_text>``. ``config``/``save`` are used by enable/disable."""
    words = args_text.split()
    sub = words[0] if words else ""
    server = words[1] if len(words) > 1 else None
    if len(words) > 2:
        return [error(USAGE)]
    if sub == "":
        return [info(_listing(manager)), {"type": "mcp_servers", "servers": manager.servers_view()}]
    if sub == "tools":
        return _tools(manager, server)
    if sub == "reload":
        try:
            names = manager.reload(server)
        except McpError as exc:
            return [error(str(exc))]
        if not names:
            return [info("no enabled MCP servers to reload")]
        return [status(f"reconnecting MCP server {n}") for n in names]
    if sub in ("enable", "disable"):
        if server is None:
            return [error(USAGE)]
        return manager.handle_op({"op": "mcp_toggle", "name": server, "enabled": sub == "enable"},
                                 config, save)
    return [error(USAGE)]
