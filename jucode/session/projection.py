"""What the model sees: the active path projected to canonical (Responses-style) items.

The projection is a pure function of the stored entries (plus image files, re-read so the
journal never holds megabytes of base64), so the same session always produces the same
request prefix, which keeps provider prompt caches warm. After a compaction the folded
entries are replaced by one summary message.

``sanitize_tool_pairs`` repairs what interrupts leave behind (a call whose output never
arrived, an output whose call was folded away): every provider rejects unpaired calls.
"""

from __future__ import annotations

import base64
import os

from .entry import (COMPACTION, GOAL_CONTEXT, PINNED_SKILL, RESPONSE_ITEM, TOOL_OUTPUT, USER,
                    USER_IMAGE, Entry, user_text)

COMPACTED_PREFIX = "[Earlier conversation compacted to a summary for context efficiency]\n\n"
PINNED_SKILL_PREFIX = "Pinned skill for future turns: "

_MIME = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
         ".webp": "image/webp", ".bmp": "image/bmp"}
_REASONING_TYPES = ("reasoning", "thinking", "redacted_thinking")


def user_text_item(text: str) -> dict:
    return {"role": "user", "content": [{"type": "input_text", "text": text}]}


def image_part(ref, cwd: str = "") -> dict | None:
    """An ``input_image`` part from a data URL, an http(s) URL or a file path (re-read now).
    Unreadable files give None: a deleted screenshot must not break the session."""
    if isinstance(ref, dict):
        ref = ref.get("image_url") or ref.get("path")
    if not isinstance(ref, str) or not ref:
        return None
    if ref.startswith(("data:", "http://", "https://")):
        return {"type": "input_image", "image_url": ref}
    path = ref if os.path.isabs(ref) or not cwd else os.path.join(cwd, ref)
    mime = _MIME.get(os.path.splitext(path)[1].lower(), "image/png")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    return {"type": "input_image",
            "image_url": f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"}


def _image_item(refs: list, cwd: str) -> dict | None:
    parts = [p for p in (image_part(r, cwd) for r in refs) if p is not None]
    return {"role": "user", "content": parts} if parts else None


def latest_compaction(path: list[Entry]) -> Entry | None:
    for entry in reversed(path):
        if entry.kind.get("type") == COMPACTION:
            return entry
    return None


def kept_entries(path: list[Entry]) -> tuple[Entry | None, list[Entry]]:
    """(latest compaction on the path, the entries it did not replace)."""
    comp = latest_compaction(path)
    if comp is None:
        return None, [e for e in path if e.kind.get("type") != COMPACTION]
    through = comp.kind.get("replaced_through")
    through = through if isinstance(through, int) else -1
    return comp, [e for e in path if e.id > through and e.kind.get("type") != COMPACTION]


def entry_items(entry: Entry, cwd: str = "") -> list[dict]:
    """Items of one entry, standalone (tool-output images not included; see request_items)."""
    kind = entry.kind
    typ = kind.get("type")
    if typ == USER:
        return [user_text_item(user_text(entry))]
    if typ == USER_IMAGE:
        item = _image_item(list(kind.get("paths") or []), cwd)
        return [item] if item else []
    if typ == RESPONSE_ITEM:
        item = kind.get("item")
        return [item] if isinstance(item, dict) else []
    if typ == TOOL_OUTPUT:
        output = kind.get("output", "")
        return [{"type": "function_call_output", "call_id": kind.get("call_id", ""),
                 "output": output if isinstance(output, (str, list)) else str(output)}]
    if typ == PINNED_SKILL:
        return [user_text_item(f"{PINNED_SKILL_PREFIX}{kind.get('name', '')}\n\n{kind.get('content', '')}")]
    if typ == GOAL_CONTEXT:
        return [user_text_item(str(kind.get("content", "")))]
    return []   # branch, proposed_plan, compaction, unknown kinds


def project_entries(entries: list[Entry], cwd: str = "", summary: str | None = None) -> list[dict]:
    """Project ``entries`` (already the kept part of a path), summary first, unsanitized."""
    items: list[dict] = []
    if summary is not None:
        items.append(user_text_item(COMPACTED_PREFIX + summary))
    pending_images: list = []
    for entry in entries:
        is_output = entry.kind.get("type") == TOOL_OUTPUT
        if not is_output and pending_images:
            img = _image_item(pending_images, cwd)
            if img:
                items.append(img)
            pending_images = []
        items.extend(entry_items(entry, cwd))
        if is_output and entry.kind.get("image"):
            pending_images.append(entry.kind["image"])
    if pending_images:
        img = _image_item(pending_images, cwd)
        if img:
            items.append(img)
    return items


def request_items(store) -> list[dict]:
    """The model input for ``store``'s active path (``request_context_items`` upstream)."""
    comp, kept = kept_entries(store.active_path())
    summary = None if comp is None else str(comp.kind.get("summary", ""))
    return sanitize_tool_pairs(project_entries(kept, getattr(store, "cwd", ""), summary))


def sanitize_tool_pairs(items: list[dict]) -> list[dict]:
    """Drop calls without outputs, outputs without calls, and reasoning that no longer
    precedes a kept call or assistant message."""
    calls = {i.get("call_id") for i in items if i.get("type") == "function_call"}
    outputs = {i.get("call_id") for i in items if i.get("type") == "function_call_output"}
    out: list[dict] = []
    nxt_ok = False     # is the next non-reasoning item (as stored) a kept call or a message?
    for item in reversed(items):
        typ = item.get("type", "message")
        if typ in _REASONING_TYPES:
            if nxt_ok:
                out.append(item)
            continue
        if typ == "function_call":
            keep = item.get("call_id") in outputs
        elif typ == "function_call_output":
            keep = item.get("call_id") in calls
        else:
            keep = True
        nxt_ok = keep and (typ == "function_call" or (typ == "message" and item.get("role") == "assistant"))
        if keep:
            out.append(item)
    out.reverse()
    return out
