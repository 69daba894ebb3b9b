"""Turning MCP replies into text: tool results, prompt messages, prompt argument labels.

Kept apart from the client so the rules (which upstream fixes exactly, see the engine facts
§5.18) can be tested without a server.
"""

from __future__ import annotations

import json

MAX_PROMPT_BYTES = 256 * 1024
MAX_RESOURCE_BYTES = 256 * 1024


def render_content_item(item) -> str:
    """One content item as the model sees it; binary data is summarized, never inlined."""
    if not isinstance(item, dict):
        return str(item)
    kind = item.get("type")
    if kind == "text":
        return str(item.get("text", ""))
    if kind in ("image", "audio"):
        data = item.get("data") or ""
        mime = item.get("mimeType") or kind
        return f"[{kind} {mime} ({len(data)} base64 bytes, not shown)]"
    if kind == "resource":
        res = item.get("resource") if isinstance(item.get("resource"), dict) else {}
        uri = res.get("uri", "")
        if "text" in res:
            return f"[resource {uri}]\n{res.get('text', '')}"
        return f"[resource {uri}]"
    if kind == "resource_link":
        return f"[resource link {item.get('uri', '')}]"
    return json.dumps(item, ensure_ascii=False)


def render_tool_result(result: dict) -> tuple[str, bool]:
    """``tools/call`` result → (text, is_error)."""
    content = result.get("content")
    if isinstance(content, list) and content:
        text = "\n".join(render_content_item(i) for i in content)
    elif result.get("structuredContent") is not None:
        text = json.dumps(result["structuredContent"], ensure_ascii=False)
    else:
        text = "(no content)"
    return text, result.get("isError") is True


def prompt_args_label(prompt: dict) -> str:
    """``""`` without arguments, ``<JSON: a, b>`` when some are required, else ``[JSON arguments]``."""
    args = [a for a in (prompt.get("arguments") or []) if isinstance(a, dict)]
    if not args:
        return ""
    required = [str(a.get("name", "")) for a in args if a.get("required")]
    if required:
        return f"<JSON: {', '.join(required)}>"
    return "[JSON arguments]"


def parse_prompt_args(prompt: dict, args_text: str) -> dict:
    """Parse the text after ``/mcp__s__p`` as a JSON object of strings; raises ValueError."""
    text = args_text.strip()
    if not text:
        values: dict = {}
    else:
        try:
            values = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"MCP prompt arguments must be a JSON object: {exc}") from None
        if not isinstance(values, dict):
            raise ValueError("MCP prompt arguments must be a JSON object")
    out = {}
    for key, value in values.items():
        if isinstance(value, str):
            out[key] = value
        elif isinstance(value, (int, float, bool)) or value is None:
            out[key] = json.dumps(value)
        else:
            raise ValueError(f"MCP prompt argument '{key}' must be a string")
    missing = [str(a.get("name")) for a in (prompt.get("arguments") or [])
               if isinstance(a, dict) and a.get("required") and a.get("name") not in out]
    if missing:
        raise ValueError(f"missing required prompt arguments: {', '.join(missing)} "
                         f"(usage: {prompt_args_label(prompt)})")
    return out


def render_prompt(result: dict) -> str:
    """``prompts/get`` result → ``role:\\n<text>`` blocks, capped at 256 KiB."""
    blocks = []
    for msg in result.get("messages") or []:
        if not isinstance(msg, dict):
            continue
        content = msg.get("content")
        items = content if isinstance(content, list) else [content]
        text = "\n".join(render_content_item(i) for i in items if i is not None)
        blocks.append(f"{msg.get('role', 'user')}:\n{text}")
    out = "\n\n".join(blocks)
    raw = out.encode("utf-8")
    if len(raw) > MAX_PROMPT_BYTES:
        out = raw[:MAX_PROMPT_BYTES].decode("utf-8", "ignore")
    return out
