"""Numbers about the active path for ``/context`` and the source text for resume summaries.

Kept apart from the store because they are read-only reports: the engine formats them into
``info`` lines (``/context``) or a summarizer prompt (idle resume summaries).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .compaction import _entry_block, item_json
from .entry import (BRANCH, PINNED_SKILL, RESPONSE_ITEM, TOOL_OUTPUT, USER, is_assistant_message)
from .projection import kept_entries, project_entries, sanitize_tool_pairs

RESUME_SOURCE_ENTRIES = 6
RESUME_SOURCE_CHARS = 4000


@dataclass
class ContextStats:
    branch_entries: int = 0        # entries on the active path
    context_items: int = 0         # items projected from the kept entries, before pairing repair
    projected_items: int = 0       # items actually sent
    compacted: bool = False
    users: int = 0
    assistant: int = 0
    tool_calls: int = 0
    tool_outputs: int = 0
    pinned_skills: int = 0
    branches: int = 0
    other_response_items: int = 0
    largest: list = field(default_factory=list)    # [(label, tokens, chars)], biggest first

    def lines(self) -> list[str]:
        """The ``context:``, ``entries:`` and ``largest_items:`` lines (token totals and cost
        come from the engine, which owns the tokenizer and usage)."""
        out = [f"context: branch_entries={self.branch_entries} context_items={self.context_items} "
               f"projected_items={self.projected_items} compacted={str(self.compacted).lower()}",
               f"entries: users={self.users} assistant={self.assistant} tool_calls={self.tool_calls} "
               f"tool_outputs={self.tool_outputs} pinned_skills={self.pinned_skills} "
               f"branches={self.branches} other_response_items={self.other_response_items}",
               "largest_items:"]
        out += [f"  {label} ~{tok} tokens ({chars} chars)" for label, tok, chars in self.largest]
        return out


def _item_label(item: dict) -> str:
    typ = item.get("type", "message")
    if typ == "function_call":
        return f"function_call {item.get('name', '')}"
    if typ == "function_call_output":
        return f"function_call_output {item.get('call_id', '')}"
    if typ == "message":
        return f"{item.get('role', 'message')} message"
    return typ


def context_stats(store, count_tokens: Callable[[str], int] | None = None, top: int = 5) -> ContextStats:
    path = store.active_path()
    comp, kept = kept_entries(path)
    summary = None if comp is None else str(comp.kind.get("summary", ""))
    raw = project_entries(kept, getattr(store, "cwd", ""), summary)
    sent = sanitize_tool_pairs(raw)
    st = ContextStats(branch_entries=len(path), context_items=len(raw), projected_items=len(sent),
                      compacted=comp is not None)
    for e in path:
        typ = e.kind.get("type")
        if typ == USER:
            st.users += 1
        elif typ == TOOL_OUTPUT:
            st.tool_outputs += 1
        elif typ == PINNED_SKILL:
            st.pinned_skills += 1
        elif typ == BRANCH:
            st.branches += 1
        elif typ == RESPONSE_ITEM:
            item = e.kind.get("item") or {}
            if item.get("type") == "function_call":
                st.tool_calls += 1
            elif is_assistant_message(item):
                st.assistant += 1
            else:
                st.other_response_items += 1
    if count_tokens is not None:
        sized = []
        for item in sent:
            text = item_json(item)
            sized.append((_item_label(item), count_tokens(text), len(text)))
        sized.sort(key=lambda x: x[1], reverse=True)
        st.largest = sized[:top]
    return st


def resume_summary_source(store, entries: int = RESUME_SOURCE_ENTRIES,
                          limit: int = RESUME_SOURCE_CHARS) -> str:
    """The last rendered entries of the active path (≤ ``limit`` chars, newest kept) that an
    idle-session summarizer turns into a one-sentence ``Working:``/``Completed:`` line."""
    blocks = [b for b in (_entry_block(e) for e in store.active_path()) if b]
    text = "\n\n".join(blocks[-entries:])
    return text[-limit:] if len(text) > limit else text
