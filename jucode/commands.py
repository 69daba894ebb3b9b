"""Slash commands: one registry for built-ins, and the dispatch order across every source.

Built-ins are registered here with the ``@command`` decorator (handlers in this module and in
``builtin_commands.py``). Skills, MCP prompts and custom commands come from the hosts
(``Extensions.extra_commands``) as :class:`Command` objects too, so ``command_list`` and
dispatch read one list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional


@dataclass
class Command:
    name: str                                   # "/model"
    args: str = ""
    description: str = ""
    handler: Optional[Callable] = None          # handler(engine, args_text)
    marker: Optional[str] = None                # None | SKILL | MCP | CMD | PROJ
    advanced: bool = False
    aliases: tuple = ()
    source: str = "builtin"                     # dispatch order: mcp, skill, builtin, custom

    def entry(self) -> dict:
        return {"command": self.name, "marker": self.marker, "args": self.args, "description": self.description}


BUILTINS: dict[str, Command] = {}
_ORDER: list[str] = []


def command(name: str, args: str = "", description: str = "", advanced: bool = False, aliases: tuple = ()):
    def deco(fn):
        cmd = Command(name, args, description, fn, None, advanced, aliases)
        BUILTINS[name] = cmd
        for a in aliases:
            BUILTINS[a] = cmd
        _ORDER.append(name)
        return fn
    return deco


def _load_builtins() -> None:
    from . import account_commands, builtin_commands  # noqa: F401  (register the handlers)


# The palette order upstream lists its commands in (reference §9); commands not named here
# (ours, and hosts' extras such as /transcript) follow in registration order.
PALETTE_ORDER = ("/help", "/login", "/usage", "/new", "/model", "/effort", "/subagents", "/tree", "/trust",
                 "/resume", "/rewind", "/permissions", "/sandbox", "/context", "/goal", "/doctor", "/skills",
                 "/pin", "/image", "/compact", "/mcp", "/quit")


def builtin_list() -> list[Command]:
    _load_builtins()
    rank = {name: i for i, name in enumerate(PALETTE_ORDER)}
    names = sorted(dict.fromkeys(_ORDER), key=lambda n: (rank.get(n, len(rank)), _ORDER.index(n)))
    return [BUILTINS[n] for n in names]


def command_list(engine) -> list[dict]:
    """Non-advanced built-ins, then skills, MCP prompts and custom commands; built-ins win clashes."""
    seen = set()
    out = []
    for c in builtin_list():
        if not c.advanced:
            out.append(c.entry())
        seen.add(c.name)
    extras = engine.ext.extra_commands()
    order = {"skill": 0, "mcp": 1, "custom": 2}
    for c in sorted(extras, key=lambda c: order.get(c.source, 3)):
        if c.name in seen:
            continue
        seen.add(c.name)
        out.append(c.entry())
    return out


def find(engine, name: str) -> Optional[Command]:
    """Dispatch order: MCP prompt, skill, built-in, custom."""
    _load_builtins()
    extras = engine.ext.extra_commands()
    for source in ("mcp", "skill"):
        for c in extras:
            if c.source == source and c.name == name:
                return c
    if name in BUILTINS:
        return BUILTINS[name]
    for c in extras:
        if c.source not in ("mcp", "skill") and c.name == name:
            return c
    return None


def run_command_line(engine, text: str) -> None:
    text = text.strip()
    if not text.startswith("/"):
        engine.emit({"type": "error", "message": f"unknown command: {text}"})
        return
    parts = text.split(None, 1)
    name = parts[0]
    args = parts[1] if len(parts) > 1 else ""
    if name == "/":
        name = "/help"
    cmd = find(engine, name)
    if cmd is None:
        engine.emit({"type": "error", "message": f"unknown command: {name}"})
        return
    if cmd.handler is None:
        engine.emit({"type": "error", "message": f"command not implemented: {name}"})
        return
    cmd.handler(engine, args)
