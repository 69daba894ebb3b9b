"""``<profile>/auth.json``: the one reader and writer of stored credentials.

Provider API keys (``providers``), MCP servers' OAuth tokens (``mcp_servers``) and whatever an
upstream install keeps there (``jucode``, ``oauth``) share the file, so every write re-reads
it and replaces only its own part; the file is written atomically with mode 0600. Never log
what this module returns.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Callable

_write_lock = threading.Lock()       # read-modify-write of one process never interleaves


def auth_path(profile) -> Path:
    return Path(profile) / "auth.json"


def read_auth(profile) -> dict:
    """The parsed file, or {} when it is missing, unreadable or not a JSON object."""
    try:
        data = json.loads(auth_path(profile).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def update_auth(profile, change: Callable[[dict], None]) -> None:
    """Apply ``change`` to the current contents and write the result back (0600, atomic)."""
    from .config import atomic_write_text

    with _write_lock:
        data = read_auth(profile)
        change(data)
        atomic_write_text(auth_path(profile), json.dumps(data, indent=2, ensure_ascii=False) + "\n", mode=0o600)


def section(data: dict, key: str) -> dict:
    """``data[key]`` as a dict, created (and attached) when missing or malformed."""
    value = data.get(key)
    if not isinstance(value, dict):
        value = data[key] = {}
    return value
