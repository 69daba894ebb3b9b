"""Skills: folders with a SKILL.md the model can be told about or have pinned into context.

Discovery walks the user locations (``<profile>/skills``, ``~/.agents/skills``) and, for trusted
non-chat projects, ``<cwd>/.jucode/skills`` and ``<cwd>/.agents/skills``. A directory holding a
SKILL.md is a skill and is not searched further (its sub-folders are the skill's own files).
Skills under ``<profile>/skills`` can be disabled; the disabled names live in
``<profile>/skills_state.json`` (outside the skills folder so toggling does not look like a
skill change to the watcher).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Optional

from .frontmatter import first_content_line, split_frontmatter

SKILL_FILE = "SKILL.md"
SKILL_MARKER = "SKILL"
STATE_FILE = "skills_state.json"
_MAX_DEPTH = 6


@dataclass
class Skill:
    """One discovered skill. ``path`` is the SKILL.md file, ``dir`` its folder."""

    name: str
    description: str
    path: str
    dir: str
    source: str              # "user" (profile), "agents" (~/.agents), "project"
    enabled: bool = True

    @property
    def slug(self) -> str:
        return slugify(self.name)


def slugify(name: str) -> str:
    """Command-safe form of a name: lowercase, runs of other characters become ``-``."""
    slug = re.sub(r"[^a-z0-9_]+", "-", name.strip().lower())
    return slug.strip("-")


def skill_locations(profile_dir: str, cwd: str, trusted: bool, chat: bool = False,
                    home: Optional[str] = None) -> list[tuple[str, str]]:
    """``(directory, source)`` pairs in priority order (earlier wins a name clash)."""
    home = home if home is not None else os.path.expanduser("~")
    locs = [(os.path.join(profile_dir, "skills"), "user"),
            (os.path.join(home, ".agents", "skills"), "agents")]
    if trusted and not chat:
        locs.append((os.path.join(cwd, ".jucode", "skills"), "project"))
        locs.append((os.path.join(cwd, ".agents", "skills"), "project"))
    return locs


def _find_skill_files(root: str) -> list[str]:
    found: list[str] = []

    def walk(d: str, depth: int) -> None:
        candidate = os.path.join(d, SKILL_FILE)
        if os.path.isfile(candidate):
            found.append(candidate)
            return
        if depth >= _MAX_DEPTH:
            return
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if entry.name.startswith(".") or not entry.is_dir():
                continue
            walk(entry.path, depth + 1)

    if os.path.isdir(root):
        walk(root, 0)
    return found


def parse_skill(path: str, source: str) -> Optional[Skill]:
    """Read one SKILL.md; None when unreadable or it has no description."""
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return None
    fields, body = split_frontmatter(text)
    folder = os.path.dirname(os.path.abspath(path))
    name = fields.get("name", "").strip() or os.path.basename(folder)
    description = fields.get("description", "").strip() or first_content_line(body, strip_heading=True)
    if not description:
        return None
    return Skill(name=name, description=description, path=os.path.abspath(path), dir=folder, source=source)


def load_disabled(profile_dir: str) -> set[str]:
    try:
        with open(os.path.join(profile_dir, STATE_FILE), "r", encoding="utf-8") as fh:
            data = json.load(fh)
        return {str(n) for n in data.get("disabled", [])}
    except (OSError, ValueError, AttributeError, TypeError):
        return set()


def set_skill_enabled(profile_dir: str, name: str, enabled: bool) -> None:
    """Persist the enable/disable state of a user skill."""
    disabled = load_disabled(profile_dir)
    (disabled.discard if enabled else disabled.add)(name)
    os.makedirs(profile_dir, exist_ok=True)
    path = os.path.join(profile_dir, STATE_FILE)
    tmp = path + f".{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"disabled": sorted(disabled)}, indent=2) + "\n")
    os.replace(tmp, path)


def discover_skills(profile_dir: str, cwd: str, trusted: bool, chat: bool = False,
                    home: Optional[str] = None, include_disabled: bool = False) -> list[Skill]:
    """All skills visible to a session, sorted by name; the first location wins a name clash."""
    disabled = load_disabled(profile_dir)
    by_name: dict[str, Skill] = {}
    for root, source in skill_locations(profile_dir, cwd, trusted, chat, home):
        for path in _find_skill_files(root):
            skill = parse_skill(path, source)
            if skill is None or skill.name in by_name:
                continue
            if source == "user" and skill.name in disabled:
                skill.enabled = False
            by_name[skill.name] = skill
    skills = sorted(by_name.values(), key=lambda s: s.name)
    if not include_disabled:
        skills = [s for s in skills if s.enabled]
    return skills


def find_skill(skills: list[Skill], name: str) -> Optional[Skill]:
    """Match by exact name, then by slug (``/pin my-skill`` or ``/pin My Skill``)."""
    name = name.strip().lstrip("/")
    for s in skills:
        if s.name == name:
            return s
    slug = slugify(name)
    for s in skills:
        if s.slug == slug:
            return s
    return None


def read_skill_content(skill: Skill) -> str:
    """The SKILL.md text (raises OSError when it vanished since discovery)."""
    with open(skill.path, "r", encoding="utf-8", errors="replace") as fh:
        return fh.read().strip()


def skill_message(skill: Skill, args: str = "", content: Optional[str] = None) -> str:
    """The user message a ``/<skill> args`` command sends to the model."""
    if content is None:
        content = read_skill_content(skill)
    text = (f"Use the following skill instructions for this request.\n\n"
            f"<skill name=\"{skill.name}\" path=\"{skill.path}\">\n{content}\n</skill>")
    if args.strip():
        text += f"\n\nUser request:\n{args.strip()}"
    return text


def skill_command_entries(skills: list[Skill]) -> list[dict]:
    """``command_list`` rows for skills (marker SKILL, no args hint)."""
    rows, seen = [], set()
    for s in skills:
        if not s.enabled or not s.slug or s.slug in seen:
            continue
        seen.add(s.slug)
        rows.append({"command": "/" + s.slug, "marker": SKILL_MARKER, "args": "",
                     "description": s.description})
    return rows


def skill_read_roots(skills: list[Skill]) -> list[str]:
    """Skill folders become extra read roots so the model can open their bundled files."""
    return [s.dir for s in skills]
