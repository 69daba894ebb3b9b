"""Custom slash commands: Markdown prompt templates in ``commands/`` folders.

``<profile>/commands/*.md`` are the user's own (marker CMD); ``<cwd>/.jucode/commands/*.md``
belong to the project (marker PROJ) and are only read for trusted projects. The file stem,
slugified, is the command name; a user command shadows a project one of the same name so a
repository cannot override what the user relies on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable, Optional

from .frontmatter import first_content_line, split_frontmatter
from .skills import slugify

DESCRIPTION_MAX = 96
ARGS_PLACEHOLDER = "$ARGUMENTS"


class CustomCommandError(Exception):
    """Raised by :func:`expand_command`; ``str()`` is the protocol error text."""


@dataclass
class CustomCommand:
    name: str
    description: str
    path: str
    source: str              # "user" | "project"

    @property
    def marker(self) -> str:
        return "CMD" if self.source == "user" else "PROJ"


def command_dirs(profile_dir: str, cwd: str, trusted: bool) -> list[tuple[str, str]]:
    dirs = [(os.path.join(profile_dir, "commands"), "user")]
    if trusted:
        dirs.append((os.path.join(cwd, ".jucode", "commands"), "project"))
    return dirs


def _describe(text: str) -> str:
    fields, body = split_frontmatter(text)
    desc = fields.get("description", "").strip() or first_content_line(body)
    return desc[:DESCRIPTION_MAX]


def discover_custom_commands(profile_dir: str, cwd: str, trusted: bool) -> list[CustomCommand]:
    """Commands sorted by name; user commands shadow project ones."""
    found: dict[str, CustomCommand] = {}
    for folder, source in command_dirs(profile_dir, cwd, trusted):
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for fname in names:
            if not fname.endswith(".md") or fname.startswith("."):
                continue
            path = os.path.join(folder, fname)
            if not os.path.isfile(path):
                continue
            name = slugify(fname[:-3])
            if not name or name in found:
                continue
            try:
                with open(path, "r", encoding="utf-8", errors="replace") as fh:
                    desc = _describe(fh.read())
            except OSError:
                desc = ""
            found[name] = CustomCommand(name=name, description=desc, path=path, source=source)
    return sorted(found.values(), key=lambda c: c.name)


def find_custom_command(commands: Iterable[CustomCommand], name: str) -> Optional[CustomCommand]:
    name = name.lstrip("/")
    for cmd in commands:
        if cmd.name == name:
            return cmd
    return None


def expand_command(cmd: CustomCommand, args: str) -> str:
    """The message text for ``/<name> args``: the body with ``$ARGUMENTS`` filled in.

    Without a placeholder, non-empty args are appended after a blank line. The file is read
    now (not at discovery) so edits apply without a reload.
    """
    try:
        with open(cmd.path, "r", encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise CustomCommandError(f"failed to read command file {cmd.path}: {exc}") from exc
    _fields, body = split_frontmatter(text)
    body = body.strip()
    args = args.strip()
    if ARGS_PLACEHOLDER in body:
        return body.replace(ARGS_PLACEHOLDER, args)
    if args:
        return f"{body}\n\n{args}"
    return body


def custom_command_entries(commands: Iterable[CustomCommand], taken: Iterable[str] = ()) -> list[dict]:
    """``command_list`` rows; names in ``taken`` (builtins, skills, MCP prompts, without ``/``)
    win the collision and are left out."""
    taken_set = {t.lstrip("/") for t in taken}
    return [{"command": "/" + c.name, "marker": c.marker, "args": "[args]", "description": c.description}
            for c in commands if c.name not in taken_set]
