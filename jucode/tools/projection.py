"""What the *model* sees of a tool result (upstream §5.15, exact limits).

The client always gets the raw output; the model gets a bounded projection so one huge read or
command cannot flood the context. Anything cut is saved in full under
``<cwd>/.jucode/truncated-results/`` and the projection points at it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Any, Optional

from .diffs import diff_stats

KIB = 1024
READ_CONTENT_DROP = 1024
READ_HASHLINES_MAX = 8 * KIB
READ_HASHLINES_KEEP = 4 * KIB
DIFF_MAX = 8 * KIB
DIFF_KEEP = 4 * KIB
OUTPUT_MAX = 16 * KIB
FIELD_KEEP = 4 * KIB
FALLBACK_KEEP = 8 * KIB
IMAGE_NOTE = "Image content is attached as a separate message; view it directly."
READ_NOTE = ("Large read output was projected for the model. Re-read with offset/limit when exact nearby "
             "lines or anchors are needed.")
DIFF_NOTE = ("Large diff was summarized for the model. Inspect full_output_path or re-read the changed "
             "files when exact lines are needed.")
OUTPUT_NOTE = ("Large tool output was projected for the model. Inspect full_output_path if exact full "
               "output is needed.")


def _enabled(var: str) -> bool:
    return os.environ.get(var, "").strip().lower() not in ("0", "false", "off")


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _nbytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def truncate_text(text: str, limit: int) -> str:
    """First limit/2 bytes + marker + last limit/2 bytes, never splitting a character."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    half = limit // 2
    head = data[:half].decode("utf-8", "ignore")
    tail = data[len(data) - half:].decode("utf-8", "ignore")
    omitted = len(data) - _nbytes(head) - _nbytes(tail)
    return f"{head}\n\n[...model projection omitted {omitted} bytes...]\n\n{tail}"


def full_output_path(tool_name: str, raw: str, cwd: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", tool_name)
    digest = hashlib.sha256((tool_name + "\0" + raw).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return os.path.join(cwd, ".jucode", "truncated-results", f"{safe}-{digest}.json")


def save_full_output(tool_name: str, raw: str, cwd: str) -> str:
    path = full_output_path(tool_name, raw, cwd)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        ignore = os.path.join(cwd, ".jucode", ".gitignore")
        if not os.path.exists(ignore):
            with open(ignore, "w", encoding="utf-8") as fh:
                fh.write("*\n")
        if not os.path.exists(path):
            with open(path, "w", encoding="utf-8", errors="surrogatepass") as fh:
                fh.write(raw)
    except OSError:
        pass
    return path


def _truncate_fields(value: Any) -> Any:
    if isinstance(value, str):
        return truncate_text(value, FIELD_KEEP) if _nbytes(value) > FIELD_KEEP else value
    if isinstance(value, list):
        return [_truncate_fields(v) for v in value]
    if isinstance(value, dict):
        return {k: _truncate_fields(v) for k, v in value.items()}
    return value


def project_model_output(tool_name: str, raw: str, cwd: str) -> str:
    """Return the string the model receives as ``function_call_output.output``."""
    try:
        obj = json.loads(raw)
    except ValueError:
        obj = None
    if not isinstance(obj, dict):
        if _nbytes(raw) <= OUTPUT_MAX:
            return raw
        path = save_full_output(tool_name, raw, cwd)
        return _dumps({"tool": tool_name, "model_output_truncated": True, "full_output_path": path,
                       "output": truncate_text(raw, FIELD_KEEP)})
    changed = False
    saved: Optional[str] = None
    if obj.get("kind") == "image" and "base64" in obj:
        obj.pop("base64")
        obj["note"] = IMAGE_NOTE
        changed = True
    if (_enabled("JUCODE_PROJECT_READ_MODEL_OUTPUT") and isinstance(obj.get("content"), str)
            and isinstance(obj.get("hashlines"), str)):
        touched = False
        if _nbytes(obj["content"]) >= READ_CONTENT_DROP:
            obj.pop("content")
            touched = True
        if _nbytes(obj["hashlines"]) > READ_HASHLINES_MAX:
            obj["hashlines"] = truncate_text(obj["hashlines"], READ_HASHLINES_KEEP)
            saved = save_full_output(tool_name, raw, cwd)
            obj["full_output_path"] = saved
            touched = True
        if touched:
            obj["model_output_truncated"] = True
            obj["note"] = READ_NOTE
            changed = True
    diff = obj.get("diff")
    if (_enabled("JUCODE_PROJECT_DIFF_MODEL_OUTPUT") and isinstance(diff, str)
            and (_nbytes(diff) > DIFF_MAX or _nbytes(raw) > OUTPUT_MAX)):
        stats = diff_stats(diff)
        obj["diff"] = truncate_text(diff, DIFF_KEEP)
        obj["diff_summary"] = {"files_changed": len(stats["files"]), "files_sample": stats["files"][:20],
                               "hunks": stats["hunks"], "additions": stats["additions"],
                               "deletions": stats["deletions"], "diff_bytes": _nbytes(diff),
                               "diff_lines": diff.count("\n")}
        saved = save_full_output(tool_name, raw, cwd)
        obj["model_output_truncated"] = True
        obj["full_output_path"] = saved
        obj["note"] = DIFF_NOTE
        changed = True
    text = _dumps(obj) if changed else raw
    if _nbytes(text) <= OUTPUT_MAX:
        return text
    saved = save_full_output(tool_name, raw, cwd)
    obj = _truncate_fields(obj)
    obj["model_output_truncated"] = True
    obj["full_output_path"] = saved
    obj["note"] = OUTPUT_NOTE
    text = _dumps(obj)
    if _nbytes(text) <= OUTPUT_MAX:
        return text
    return _dumps({"tool": tool_name, "model_output_truncated": True, "full_output_path": saved,
                   "output": truncate_text(text, FALLBACK_KEEP)})
