"""Project instructions: AGENTS.md / CLAUDE.md files from the repository root down to cwd.

Files closer to cwd come later so their guidance reads as the more specific refinement of the
repository-wide rules. The total is capped (64 KiB) because instructions ride along with every
request; past the cap the text is cut and a visible marker tells the model it saw a prefix.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

from ..paths import ancestors

INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")
INSTRUCTIONS_BUDGET = 64 * 1024
TRUNCATION_SUFFIX = "\n\n[project instructions truncated by JuCode budget]\n"


@dataclass
class InstructionFile:
    """One discovered instructions file (content possibly cut to the remaining budget)."""

    path: str
    content: str
    truncated: bool = False


def _ancestors_top_down(cwd: str) -> list[str]:
    """``/``, ``/a``, ``/a/b`` ... ending with cwd itself."""
    return ancestors(cwd)[::-1]


def find_git_root(cwd: str) -> Optional[str]:
    """The first ancestor, walking from ``/`` down, that contains ``.git`` (upstream's rule)."""
    for d in _ancestors_top_down(cwd):
        if os.path.exists(os.path.join(d, ".git")):
            return d
    return None


def instruction_dirs(cwd: str) -> list[str]:
    """Directories searched for instruction files, outermost first.

    From the git root down to cwd; without git, from the topmost ancestor holding an
    instructions file; else just cwd.
    """
    chain = _ancestors_top_down(cwd)
    start = find_git_root(cwd)
    if start is None:
        for d in chain:
            if any(os.path.isfile(os.path.join(d, n)) for n in INSTRUCTION_FILES):
                start = d
                break
    if start is None:
        return [chain[-1]]
    return chain[chain.index(start):]


def _cut_utf8(text: str, max_bytes: int) -> str:
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode("utf-8", errors="ignore")


def discover_instructions(cwd: str, budget: int = INSTRUCTIONS_BUDGET) -> list[InstructionFile]:
    """Read every instructions file in :func:`instruction_dirs` order within ``budget`` bytes.

    Unreadable or empty files are skipped. When a file does not fit, its fitting prefix is
    kept with :data:`TRUNCATION_SUFFIX` appended and discovery stops.
    """
    out: list[InstructionFile] = []
    remaining = budget
    for d in instruction_dirs(cwd):
        for name in INSTRUCTION_FILES:
            path = os.path.join(d, name)
            if not os.path.isfile(path):
                continue
            try:
                with open(path, "r", encoding="utf-8", errors="replace") as fh:
                    content = fh.read()
            except OSError:
                continue
            if not content.strip():
                continue
            size = len(content.encode("utf-8"))
            if size <= remaining:
                out.append(InstructionFile(path, content))
                remaining -= size
                continue
            out.append(InstructionFile(path, _cut_utf8(content, remaining) + TRUNCATION_SUFFIX, True))
            return out
    return out


def instruction_watch_paths(cwd: str) -> list[str]:
    """Every instructions file path that would be read (existing or not), for the watcher."""
    return [os.path.join(d, n) for d in instruction_dirs(cwd) for n in INSTRUCTION_FILES]
