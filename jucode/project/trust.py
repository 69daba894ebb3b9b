"""Project trust: whether a project's own skills, commands and hooks may be loaded.

Project-local resources can run code (hooks) or steer the model (skills, commands), so a
project that ships them is only used after the user said so. Decisions live in
``<profile>/trust.json`` as ``{"projects": {path: bool}}``; the decision stored for the nearest
ancestor applies, so trusting a repository root covers every directory inside it.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from typing import Optional

from ..paths import ancestors

log = logging.getLogger(__name__)

TRUST_FILE = "trust.json"
LOCAL_RESOURCES = (os.path.join(".jucode", "skills"), os.path.join(".jucode", "hooks.json"),
                   os.path.join(".jucode", "commands"))
TRUST_USAGE = "usage: /trust [yes|no|repo]"


def _canon(path: str) -> str:
    return os.path.realpath(os.path.abspath(path))


def trust_path(profile_dir: str) -> str:
    return os.path.join(profile_dir, TRUST_FILE)


def load_trust(profile_dir: str) -> dict[str, bool]:
    """All stored decisions; a missing or broken file means no decisions."""
    try:
        with open(trust_path(profile_dir), "r", encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable trust.json: %s", exc)
        return {}
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        return {}
    return {str(k): bool(v) for k, v in projects.items() if isinstance(v, bool)}


def _atomic_write_json(path: str, data: dict) -> None:
    """Pretty JSON + newline via a temp file and rename, so readers never see half a file."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def store_trust(profile_dir: str, path: str, trusted: bool) -> str:
    """Record a decision for ``path`` (canonicalized); returns the stored path."""
    path = _canon(path)
    try:
        with open(trust_path(profile_dir), "r", encoding="utf-8") as fh:
            data = json.load(fh)
        if not isinstance(data, dict):
            data = {}
    except (OSError, ValueError):
        data = {}
    projects = data.get("projects")
    if not isinstance(projects, dict):
        projects = {}
    projects[path] = bool(trusted)
    data["projects"] = projects
    _atomic_write_json(trust_path(profile_dir), data)
    return path


def trust_decision(profile_dir: str, cwd: str) -> Optional[tuple[str, bool]]:
    """``(path, trusted)`` stored for the nearest ancestor of cwd (cwd included), or None."""
    decisions = load_trust(profile_dir)
    if not decisions:
        return None
    for cur in ancestors(_canon(cwd)):
        if cur in decisions:
            return cur, decisions[cur]
    return None


def has_local_resources(cwd: str) -> bool:
    """True when the project ships skills, hooks or commands of its own."""
    return any(os.path.exists(os.path.join(cwd, rel)) for rel in LOCAL_RESOURCES)


def is_trusted(profile_dir: str, cwd: str) -> bool:
    """A stored decision wins; otherwise only projects without local resources are trusted."""
    decision = trust_decision(profile_dir, cwd)
    if decision is not None:
        return decision[1]
    return not has_local_resources(cwd)


def find_repo_root(cwd: str, include_self: bool = False) -> Optional[str]:
    """Nearest ancestor holding ``.git`` (cwd itself only when ``include_self``)."""
    chain = ancestors(_canon(cwd))
    for cur in chain if include_self else chain[1:]:
        if os.path.exists(os.path.join(cur, ".git")):
            return cur
    return None


def trust_prompt(profile_dir: str, cwd: str) -> Optional[dict]:
    """Fields of the ``trust_prompt`` event, or None when no prompt is due.

    Due only for an undecided project that has local resources.
    """
    if trust_decision(profile_dir, cwd) is not None or not has_local_resources(cwd):
        return None
    return {"cwd": _canon(cwd), "repo_root": find_repo_root(cwd)}


@dataclass
class TrustOutcome:
    """Result of ``/trust``: ``kind`` is the event type to emit (status, info or error)."""

    kind: str
    message: str
    changed: bool = False          # a decision was stored: reload skills, commands and hooks
    trusted: Optional[bool] = None


def trust_command(profile_dir: str, cwd: str, args: str) -> TrustOutcome:
    """``/trust [yes|no|repo]``: store a decision, or describe the current one."""
    arg = args.strip().lower()
    if arg == "":
        decision = trust_decision(profile_dir, cwd)
        here = _canon(cwd)
        if decision is None:
            state = "trusted" if is_trusted(profile_dir, cwd) else "untrusted"
            reason = ("no local skills, commands or hooks" if state == "trusted"
                      else "undecided; answer with /trust yes|no|repo")
            return TrustOutcome("info", f"project {here}: {state} ({reason})")
        path, ok = decision
        state = "trusted" if ok else "untrusted"
        if path == here:
            return TrustOutcome("info", f"project {here}: {state}")
        return TrustOutcome("info", f"project {here}: {state} (decision stored for {path})")
    if arg in ("yes", "y", "trust"):
        path = store_trust(profile_dir, cwd, True)
        return TrustOutcome("status", f"trusted {path}", True, True)
    if arg in ("no", "n"):
        path = store_trust(profile_dir, cwd, False)
        return TrustOutcome("status", f"untrusted {path}", True, False)
    if arg == "repo":
        root = find_repo_root(cwd, include_self=True) or cwd
        path = store_trust(profile_dir, root, True)
        return TrustOutcome("status", f"trusted {path}", True, True)
    return TrustOutcome("error", TRUST_USAGE)
