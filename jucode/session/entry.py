"""One node of the session tree, plus helpers that read text out of stored kinds.

Entries are plain data: ``{id, parent_id, created_at, kind: {type, ...}}`` on disk. ``kind``
stays a dict (not a class per type) because response items are stored raw and legacy or
future journals may carry fields we don't know; round-tripping them untouched matters more
than typing them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .paths import parse_entry_id

# Entry kind type names (the ``kind.type`` field).
BRANCH = "branch"
USER = "user"
USER_IMAGE = "user_image"
RESPONSE_ITEM = "response_item"
TOOL_OUTPUT = "tool_output"
PINNED_SKILL = "pinned_skill"
GOAL_CONTEXT = "goal_context"
PROPOSED_PLAN = "proposed_plan"
COMPACTION = "compaction"

ROOT_LABEL = "root"


class SessionError(Exception):
    """A user-facing session failure; ``str(exc)`` is the exact protocol message."""


@dataclass
class Entry:
    id: int
    parent_id: int | None
    created_at: int
    kind: dict

    @property
    def type(self) -> str:
        return self.kind.get("type", "")

    def to_json(self) -> dict:
        return {"id": self.id, "parent_id": self.parent_id, "created_at": self.created_at,
                "kind": self.kind}

    @classmethod
    def from_json(cls, obj) -> "Entry | None":
        """Tolerant parse: ids may be ``"e5"`` strings, ``created_at`` may be missing.
        Returns None for anything that is not recognisably an entry."""
        if not isinstance(obj, dict):
            return None
        eid = parse_entry_id(obj.get("id"))
        kind = obj.get("kind")
        if eid is None or not isinstance(kind, dict):
            return None
        kind = _normalize_kind(kind)
        if kind is None:
            return None
        parent = obj.get("parent_id")
        parent = None if parent is None else parse_entry_id(parent)
        created = obj.get("created_at")
        if not isinstance(created, (int, float)) or isinstance(created, bool):
            created = 0
        return cls(eid, parent, int(created), kind)


def _normalize_kind(kind: dict) -> dict | None:
    """Accept ``{"type": ...}`` and the externally tagged legacy shape ``{"User": {...}}``."""
    if isinstance(kind.get("type"), str):
        return kind
    if len(kind) == 1:
        (tag, body), = kind.items()
        if isinstance(body, dict):
            snake = "".join("_" + c.lower() if c.isupper() else c for c in tag).lstrip("_")
            out = {"type": snake}
            out.update(body)
            return out
    return None


def now_secs() -> int:
    return int(time.time())


# ---- text helpers shared by transcript, tree labels, compaction -------------------------

def content_text(content) -> str:
    """Concatenated text of a message ``content`` (string or list of parts)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for part in content:
        if isinstance(part, dict):
            text = part.get("text")
            if isinstance(text, str):
                parts.append(text)
        elif isinstance(part, str):
            parts.append(part)
    return "".join(parts)


def is_assistant_message(item) -> bool:
    return (isinstance(item, dict) and item.get("role") == "assistant"
            and item.get("type", "message") == "message")


def is_user_message_item(item) -> bool:
    return isinstance(item, dict) and item.get("role") == "user" and item.get("type", "message") == "message"


def first_line(text: str, limit: int) -> str:
    line = text.strip().split("\n", 1)[0].strip()
    if len(line) > limit:
        line = line[:limit]
    return line


def user_text(entry: Entry) -> str:
    content = entry.kind.get("content", "")
    return content if isinstance(content, str) else content_text(content)
