"""The ``transcript`` event: what a front-end re-renders after /resume, /checkout, /new.

It shows the conversation as the user saw it, not as the model sees it: injected user items,
function calls, pinned skills, goal context and compaction summaries are hidden; images sent
right after a user message are folded into that message; a plan appears once, where it was
first proposed, with its latest status.
"""

from __future__ import annotations

from .entry import (BRANCH, PROPOSED_PLAN, RESPONSE_ITEM, TOOL_OUTPUT, USER, USER_IMAGE, Entry,
                    content_text, is_assistant_message, user_text)


def _image_paths(kind: dict) -> list:
    paths = kind.get("paths")
    if paths is None:
        paths = kind.get("images")
    return [p for p in (paths or []) if isinstance(p, str)]


def transcript_items(path: list[Entry]) -> list[dict]:
    items: list[dict] = []
    latest_plan: dict[str, dict] = {}
    for entry in path:
        if entry.kind.get("type") == PROPOSED_PLAN:
            latest_plan[str(entry.kind.get("id", ""))] = entry.kind
    plans_shown: set[str] = set()
    last_user: dict | None = None
    for entry in path:
        kind = entry.kind
        typ = kind.get("type")
        if typ == USER_IMAGE:
            if last_user is not None:
                have = last_user.setdefault("images", [])
                have.extend(p for p in _image_paths(kind) if p not in have)
            continue
        last_user = None
        if typ == USER:
            item = {"role": "user", "content": user_text(entry)}
            images = _image_paths(kind)
            if images:
                item["images"] = images
            files = kind.get("files")
            if files:
                item["files"] = files
            items.append(item)
            last_user = item
        elif typ == BRANCH:
            items.append({"role": "branch", "label": kind.get("label", "")})
        elif typ == RESPONSE_ITEM:
            item = kind.get("item")
            if is_assistant_message(item):
                text = content_text(item.get("content"))
                if text:
                    items.append({"role": "assistant", "content": text})
        elif typ == TOOL_OUTPUT:
            output = kind.get("output", "")
            if not isinstance(output, str):
                output = content_text(output) if isinstance(output, list) else str(output)
            items.append({"role": "tool", "name": kind.get("name", ""), "output": output})
        elif typ == PROPOSED_PLAN:
            pid = str(kind.get("id", ""))
            if pid in plans_shown:
                continue
            plans_shown.add(pid)
            latest = latest_plan.get(pid, kind)
            items.append({"role": "plan", "id": kind.get("id"), "title": latest.get("title", ""),
                          "content": latest.get("markdown", ""), "status": latest.get("status", "")})
        # pinned_skill, goal_context, compaction: hidden
    return items
