"""The file tools: ``read``, ``write`` and ``str_replace`` (alias ``edit``).

``read`` only decodes the lines it returns, so reading 200 lines of a 5 MB file stays cheap;
the edit tools enforce read-before-edit and snapshot the file before writing.
"""

from __future__ import annotations

import base64
import os

from .base import ToolContext, ToolError
from .checkpoints import auto_checkpoint
from .common import check_fresh, get_int, get_str, rel_label, remember, resolve, write_bytes
from .diffs import unified_diff
from .hashline import format_hashlines
from .textcodec import decode_text, encode_text, read_for_edit

IMAGE_MIMES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
               ".gif": "image/gif", ".webp": "image/webp"}
MAX_IMAGE = 1024 * 1024
LARGE_READ = 256 * 1024


def run_read(args: dict, ctx: ToolContext) -> dict:
    raw = get_str(args, "path")
    offset = get_int(args, "offset", 1) or 1
    limit = get_int(args, "limit")
    path = resolve(ctx, raw)
    try:
        st = os.stat(path)
    except OSError as exc:
        return {"path": raw, "error": f"failed to read metadata: {exc.strerror or exc}"}
    if os.path.isdir(path):
        return {"path": raw, "error": "path is a directory; use ls to list it"}
    mime = IMAGE_MIMES.get(os.path.splitext(path)[1].lower())
    if mime:
        if st.st_size > MAX_IMAGE:
            return {"path": raw, "kind": "image", "mime": mime, "bytes": st.st_size, "truncated": True,
                    "error": "image is too large to inline; the limit is 1 MiB. Resize or crop it first."}
        with open(path, "rb") as fh:
            data = fh.read()
        remember(ctx, path, data)
        return {"path": raw, "kind": "image", "mime": mime, "bytes": len(data),
                "base64": base64.b64encode(data).decode("ascii")}
    with open(path, "rb") as fh:
        data = fh.read()
    remember(ctx, path, data)
    decoded = decode_text(data)
    if decoded is None:
        return {"path": raw, "kind": "binary", "bytes": len(data),
                "error": "file is not supported text encoding"}
    text, enc = decoded
    lines, truncated = _select(text, offset, limit)
    out = {"path": raw, "kind": "text", "encoding": enc, "offset": offset, "lines_read": len(lines),
           "truncated": truncated, "content": "".join(lines),
           "hashlines": format_hashlines(lines, offset)}
    if limit is None and len(data) > LARGE_READ:
        out["warning"] = "large file read without a line limit"
        out["suggestion"] = "read with offset/limit, or use ripgrep/outline to find the lines you need"
    return out


def _select(text: str, offset: int, limit):
    """Lines offset..offset+limit-1 (1-based, newline kept) without splitting the whole file."""
    pos, n = 0, 1
    while n < offset:
        nl = text.find("\n", pos)
        if nl < 0:
            return [], False
        pos, n = nl + 1, n + 1
    out = []
    while pos < len(text):
        if limit is not None and len(out) >= limit:
            return out, True
        nl = text.find("\n", pos)
        if nl < 0:
            out.append(text[pos:])
            break
        out.append(text[pos:nl + 1])
        pos = nl + 1
    return out, False


def run_write(args: dict, ctx: ToolContext) -> dict:
    raw = get_str(args, "path")
    content = get_str(args, "content")
    path = resolve(ctx, raw, write=True)
    if os.path.isdir(path):
        raise ToolError(f"path is a directory: {raw}")
    old_text = ""
    existed = os.path.exists(path)
    enc = "utf-8"
    if existed:
        with open(path, "rb") as fh:
            old = fh.read()
        check_fresh(ctx, path, old, "write")
        decoded = decode_text(old)
        if decoded:
            old_text, enc = decoded
    new_data = encode_text(content, enc)
    auto_checkpoint(ctx, "auto-write", [path])
    write_bytes(path, new_data)
    remember(ctx, path, new_data)
    return {"path": raw, "written_bytes": len(new_data), "created": not existed,
            "diff": unified_diff(old_text, content, rel_label(path, ctx.cwd))}


def validate_str_edits(args: dict):
    edits = args.get("edits")
    if edits is None:
        raise ToolError("missing edits")
    if not isinstance(edits, list):
        raise ToolError("missing edits")
    if not edits:
        raise ToolError("edits must not be empty")
    out = []
    for e in edits:
        if not isinstance(e, dict) or not isinstance(e.get("oldText"), str):
            raise ToolError("each edit requires oldText")
        if not isinstance(e.get("newText"), str):
            raise ToolError("each edit requires newText")
        if e["oldText"] == "":
            raise ToolError("oldText must not be empty")
        out.append((e["oldText"], e["newText"]))
    return out


class MatchError(ToolError):
    def __init__(self, old: str, count: int):
        super().__init__(f"oldText must match exactly once; found {count}")
        self.old_text = old


def replace_all(text: str, edits) -> str:
    """Apply (old, new) pairs matched against the original text, all at once."""
    spans = []
    for old, new in edits:
        first = text.find(old)
        count = 0 if first < 0 else text.count(old)
        if count != 1:
            raise MatchError(old, count)
        spans.append((first, first + len(old), new))
    spans.sort()
    for a, b in zip(spans, spans[1:]):
        if b[0] < a[1]:
            raise ToolError("edits must not overlap")
    for s, t, new in reversed(spans):
        text = text[:s] + new + text[t:]
    return text


def run_str_replace(args: dict, ctx: ToolContext) -> dict:
    raw = get_str(args, "path")
    edits = validate_str_edits(args)
    path = resolve(ctx, raw, write=True)
    data, text, enc = read_for_edit(ctx, path, raw, "edit")
    try:
        new_text = replace_all(text, edits)
    except MatchError as exc:
        return {"error": str(exc), "oldText": exc.old_text}
    new_data = encode_text(new_text, enc)
    auto_checkpoint(ctx, "auto-edit", [path])
    write_bytes(path, new_data)
    remember(ctx, path, new_data)
    return {"path": raw, "edits": len(edits), "written_bytes": len(new_data),
            "diff": unified_diff(text, new_text, rel_label(path, ctx.cwd))}
