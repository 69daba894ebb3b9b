"""The ``/resume`` picker: session summaries read from sidecars, newest first.

Sidecars exist so listing sessions never parses journals (which can be megabytes); each is
small and replaced atomically, so a reader sees an old or a new version, never half of one.
Legacy sessions (a full ``<id>.json`` without a journal) are summarized from their entries.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import orjson

from . import paths
from .entry import USER, Entry, first_line, user_text

LABEL_CHARS = 72
SUMMARY_CHARS = 120


@dataclass
class SessionSummary:
    id: str
    label: str = ""
    created_at: int = 0
    updated_at: int = 0
    entries_count: int = 0
    leaf_id: int | None = None
    resume_summary: str | None = None
    resume_status: str | None = None
    active: bool = False

    @property
    def detail(self) -> str:
        """Upstream keeps this internal (not serialized); useful for logs and pickers."""
        if self.resume_summary:
            state = "completed" if (self.resume_status or "").lower().startswith("complete") else "working"
            return f"{state} · {first_line(self.resume_summary, SUMMARY_CHARS)}"
        ts = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.updated_at)) if self.updated_at else "?"
        leaf = paths.fmt_entry_id(self.leaf_id) or "empty"
        return f"{self.resume_status or 'saved'} · updated {ts} · entries {self.entries_count} · {leaf}"

    def to_item(self) -> dict:
        """One ``resume_view.items`` element."""
        return {"id": self.id, "label": self.label or self.id, "active": self.active}


def _from_sidecar(session_id: str, obj: dict) -> SessionSummary:
    def num(key):
        v = obj.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) else 0

    label = obj.get("label") if isinstance(obj.get("label"), str) else ""
    count = num("entries_count")
    if "journal" not in obj and isinstance(obj.get("entries"), list):   # legacy full session
        entries = [e for e in (Entry.from_json(x) for x in obj["entries"]) if e is not None]
        count = len(entries)
        if not label:
            label = next((first_line(user_text(e), LABEL_CHARS) for e in entries
                          if e.kind.get("type") == USER), "")
    return SessionSummary(
        id=session_id, label=label, created_at=num("created_at"), updated_at=num("updated_at"),
        entries_count=count, leaf_id=paths.parse_entry_id(obj.get("leaf_id")),
        resume_summary=obj.get("resume_summary") if isinstance(obj.get("resume_summary"), str) else None,
        resume_status=obj.get("resume_status") if isinstance(obj.get("resume_status"), str) else None)


def list_sessions(profile_dir, cwd, active_id: str | None = None) -> list[SessionSummary]:
    """Sessions of ``cwd`` (newest first). Empty list → the engine says
    ``no sessions for current directory``."""
    directory = paths.sessions_dir(profile_dir, cwd)
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    out = []
    for name in names:
        if not name.endswith(".json") or name.startswith("."):
            continue
        sid = name[:-5]
        try:
            with open(os.path.join(directory, name), "rb") as f:
                obj = orjson.loads(f.read())
        except (OSError, orjson.JSONDecodeError):
            continue
        if not isinstance(obj, dict):
            continue
        summary = _from_sidecar(sid, obj)
        summary.active = sid == active_id
        out.append(summary)
    out.sort(key=lambda s: (s.updated_at, s.id), reverse=True)
    return out
