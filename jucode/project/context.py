"""One call that loads everything project-dependent for a session (startup, /new, reloads).

The engine keeps the returned :class:`ProjectContext` and rebuilds it when the watcher reports
a change or ``/trust`` stores a decision; each field can also be refreshed on its own with the
module that produced it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional

from .custom_commands import CustomCommand, custom_command_entries, discover_custom_commands
from .hooks import HookSet, load_hooks
from .instructions import InstructionFile, discover_instructions
from .prompt import is_chat_cwd
from .skills import Skill, discover_skills, skill_command_entries
from .trust import is_trusted, trust_prompt


@dataclass
class ProjectContext:
    profile_dir: str
    cwd: str
    chat: bool
    trusted: bool
    skills: list[Skill] = field(default_factory=list)
    commands: list[CustomCommand] = field(default_factory=list)
    hooks: HookSet = field(default_factory=HookSet)
    instructions: list[InstructionFile] = field(default_factory=list)
    trust_prompt: Optional[dict] = None      # fields of the trust_prompt event, when one is due

    def command_entries(self, taken: tuple[str, ...] = ()) -> list[dict]:
        """Skill rows then custom-command rows for ``command_list``.

        ``taken``: builtin and MCP prompt names (``/x``); they and skills win collisions.
        """
        skill_rows = [r for r in skill_command_entries(self.skills) if r["command"] not in set(taken)]
        used = set(taken) | {r["command"] for r in skill_rows}
        return skill_rows + custom_command_entries(self.commands, taken=used)


def load_project_context(profile_dir: str, cwd: str, chat: Optional[bool] = None,
                         include_instructions: bool = True, home: Optional[str] = None) -> ProjectContext:
    """Trust first (it gates the rest), then skills, commands, hooks and instructions.

    Chat sessions get no project skills, no project instructions and no trust prompt; user-level
    commands and hooks still apply.
    """
    cwd = os.path.realpath(cwd)
    if chat is None:
        chat = is_chat_cwd(profile_dir, cwd)
    trusted = False if chat else is_trusted(profile_dir, cwd)
    return ProjectContext(
        profile_dir=profile_dir, cwd=cwd, chat=chat, trusted=trusted,
        skills=discover_skills(profile_dir, cwd, trusted, chat=chat, home=home),
        commands=discover_custom_commands(profile_dir, cwd, trusted),
        hooks=load_hooks(profile_dir, cwd, trusted),
        instructions=discover_instructions(cwd) if include_instructions and not chat else [],
        trust_prompt=None if chat else trust_prompt(profile_dir, cwd),
    )
