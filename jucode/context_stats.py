"""The text `/context` prints: sizes of the branch, the projection and the biggest items."""

from __future__ import annotations

import orjson


def context_lines(engine) -> list[str]:
    s = engine.sessions
    items = s.request_items()
    path = s.store.active_path() if s.store is not None else []
    counts = {"user": 0, "assistant": 0, "tool_calls": 0, "tool_outputs": 0, "pinned_skills": 0,
              "branches": 0, "other": 0}
    compacted = False
    for e in path:
        t = e.kind.get("type")
        if t == "user":
            counts["user"] += 1
        elif t == "tool_output":
            counts["tool_outputs"] += 1
        elif t == "pinned_skill":
            counts["pinned_skills"] += 1
        elif t == "branch":
            counts["branches"] += 1
        elif t == "compaction":
            compacted = True
        elif t == "response_item":
            it = e.kind.get("item") or {}
            if it.get("type") == "function_call":
                counts["tool_calls"] += 1
            elif it.get("type") == "message":
                counts["assistant"] += 1
            else:
                counts["other"] += 1
    tokens = s.count_tokens(items)
    t = engine.totals
    sized = sorted(((len(orjson.dumps(i)), i) for i in items), key=lambda p: -p[0])[:5]
    lines = [
        f"context: branch_entries={len(path)} context_items={len(items)} projected_items={len(items)} "
        f"compacted={str(compacted).lower()}",
        f"context_tokens: full={tokens} projected={tokens} tokenizer={s.counter().tokenizer} "
        f"api_usage_input={t['input_tokens']} api_usage_cached_input={t['cached_input_tokens']} "
        f"api_usage_output={t['output_tokens']} cost=${engine.cost:.4f}",
        f"entries: users={counts['user']} assistant={counts['assistant']} tool_calls={counts['tool_calls']} "
        f"tool_outputs={counts['tool_outputs']} pinned_skills={counts['pinned_skills']} "
        f"branches={counts['branches']} other_response_items={counts['other']}",
        "largest_items:",
    ]
    for size, item in sized:
        label = item.get("type") or item.get("role") or "item"
        lines.append(f"  {label} ~{s.count_tokens([item])} tokens ({size} chars)")
    return lines
