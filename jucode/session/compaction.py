"""Compaction planning: which old entries to fold into a summary, and the text to summarize.

The model call itself belongs to the engine (it streams progress events and may fail); this
module only decides *what* to fold, renders it, and records the result. The rules protect
the request's validity and the user's intent: the newest entries (up to a token budget)
stay verbatim, the latest user message is never folded, and a function call is never
separated from its output (a provider would reject the orphan).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import orjson

from .entry import (COMPACTION, GOAL_CONTEXT, PINNED_SKILL, PROPOSED_PLAN, RESPONSE_ITEM,
                    TOOL_OUTPUT, USER, USER_IMAGE, Entry, content_text, is_assistant_message,
                    is_user_message_item, user_text)
from .projection import entry_items, kept_entries, user_text_item

KEEP_RECENT_TOKENS = 20_000

# Our wording of upstream's summarizer system prompt (used instead of empty instructions).
SUMMARY_INSTRUCTIONS = (
    "You condense the earlier part of a coding-agent conversation into a summary that will "
    "stand in for those turns from now on. Keep what the work still depends on: the user's "
    "goals and requests, decisions made and why, facts and constraints learned, files and "
    "tools touched and what came of it, and anything left unfinished. Write dense prose or "
    "bullets. Reply with the summary only."
)
SUMMARY_REQUEST_PREFIX = "Summarize this earlier conversation:\n\n"
EMPTY_SUMMARY_ERROR = "summarization produced no output"
NOTHING_TO_COMPACT = "nothing old enough to compact"


@dataclass
class CompactionPlan:
    folded: list[Entry]                 # oldest first
    replaced_through: int               # id of the newest folded entry
    text: str                           # fold_text(folded, previous_summary)
    previous_summary: str | None = None
    folded_tokens: int = 0
    kept_tokens: int = 0
    kept: list[Entry] = field(default_factory=list)


def item_json(item) -> str:
    """Compact JSON of one item, the unit upstream counts tokens over."""
    return orjson.dumps(item).decode("utf-8")


def count_items_tokens(items: list, count_tokens: Callable[[str], int]) -> int:
    return sum(count_tokens(item_json(i)) for i in items)


def _call_id_of(entry: Entry) -> str | None:
    kind = entry.kind
    if kind.get("type") == RESPONSE_ITEM:
        item = kind.get("item")
        if isinstance(item, dict) and item.get("type") == "function_call":
            return item.get("call_id")
    return None


def plan_compaction(store, count_tokens: Callable[[str], int],
                    keep_recent_tokens: int = KEEP_RECENT_TOKENS) -> CompactionPlan | None:
    """What to fold now, or None when nothing is old enough (``/compact`` then says
    :data:`NOTHING_TO_COMPACT`). ``count_tokens(text) -> int`` is the engine's tokenizer."""
    comp, kept = kept_entries(store.active_path())
    if len(kept) < 2:
        return None
    cwd = getattr(store, "cwd", "")
    tokens = [count_items_tokens(entry_items(e, cwd), count_tokens) for e in kept]
    # Newest → oldest: keep at least the newest, stop before exceeding the budget.
    k = len(kept) - 1
    total = tokens[k]
    while k > 0 and total + tokens[k - 1] <= keep_recent_tokens:
        k -= 1
        total += tokens[k]
    last_user = max((i for i, e in enumerate(kept) if e.kind.get("type") == USER), default=None)
    if last_user is not None:
        k = min(k, last_user)
    call_index = {}
    for i, e in enumerate(kept):
        cid = _call_id_of(e)
        if cid is not None:
            call_index.setdefault(cid, i)
    while k > 0:            # pull the boundary back over any call whose output is kept
        earliest = min((call_index.get(e.kind.get("call_id"), k) for e in kept[k:]
                        if e.kind.get("type") == TOOL_OUTPUT), default=k)
        if earliest >= k:
            break
        k = earliest
    if k <= 0:
        return None
    folded = kept[:k]
    previous = None if comp is None else str(comp.kind.get("summary", ""))
    return CompactionPlan(folded=folded, replaced_through=folded[-1].id,
                          text=fold_text(folded, previous), previous_summary=previous,
                          folded_tokens=sum(tokens[:k]), kept_tokens=sum(tokens[k:]),
                          kept=kept[k:])


def _entry_block(entry: Entry) -> str | None:
    kind = entry.kind
    typ = kind.get("type")
    if typ == USER:
        return f"User: {user_text(entry)}"
    if typ == USER_IMAGE:
        return f"User attached {len(kind.get('paths') or [])} image(s)"
    if typ == RESPONSE_ITEM:
        item = kind.get("item")
        if not isinstance(item, dict):
            return None
        if item.get("type") == "function_call":
            return f"Assistant tool call {item.get('name', '')}: {item.get('arguments', '')}"
        if is_assistant_message(item):
            text = content_text(item.get("content"))
            return f"Assistant: {text}" if text else None
        if is_user_message_item(item):
            return f"User: {content_text(item.get('content'))}"
        return None
    if typ == TOOL_OUTPUT:
        output = kind.get("output", "")
        if not isinstance(output, str):
            output = content_text(output) if isinstance(output, list) else str(output)
        return f"Tool {kind.get('name', '')} output: {output}"
    if typ == PINNED_SKILL:
        return f"(pinned skill: {kind.get('name', '')})"
    if typ == GOAL_CONTEXT:
        return f"Goal context: {kind.get('content', '')}"
    if typ == PROPOSED_PLAN:
        return f"Proposed plan ({kind.get('status', '')}): {kind.get('title', '')}\n{kind.get('markdown', '')}"
    return None   # branch, compaction


def fold_text(entries: list[Entry], previous_summary: str | None = None) -> str:
    """The text the summarizer compresses (previous summary first, one block per entry)."""
    blocks = [b for b in (_entry_block(e) for e in entries) if b is not None]
    head = f"Earlier summary:\n{previous_summary}\n\n" if previous_summary else ""
    return head + "\n\n".join(blocks)


def summary_request_input(folded: str) -> list[dict]:
    """Model input for the summarizer call (instructions: :data:`SUMMARY_INSTRUCTIONS`)."""
    return [user_text_item(SUMMARY_REQUEST_PREFIX + folded)]


def apply_compaction(store, summary: str, replaced_through: int) -> Entry:
    """Record a finished summary and make it durable. Raises ``SessionError`` for an empty
    summary (upstream's ``summarization produced no output``) and ``SessionWriteError``
    when saving fails (the entry is still in the session)."""
    from .entry import SessionError
    if not summary or not summary.strip():
        raise SessionError(EMPTY_SUMMARY_ERROR)
    entry = store.append({"type": COMPACTION, "summary": summary,
                          "replaced_through": int(replaced_through)})
    store.sync()
    return entry
