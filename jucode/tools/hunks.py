"""Hunk planning and partial approval for edit calls (upstream hunks.rs behaviour).

The approval card shows each hunk with an id (``f<file>h<n>``); the user may approve a subset
and we rewrite the call's arguments so only those hunks run. Planning failures return None:
the client then offers only whole-call approval.
"""

from __future__ import annotations

import copy
import os
from typing import List, Optional, Tuple

from .base import ToolError
from .common import expand_path, rel_label
from .diffs import unified_diff
from .files import replace_all, validate_str_edits
from .hashline import apply_edits, parse_edit
from .patch import _strip_label
from .textcodec import decode_text

HUNK_TOOLS = ("write", "str_replace", "edit", "hashline_edit", "apply_patch")
FILTER_FAILED = "selective approval failed: {}. The call was not executed; approve the whole call or deny it."


def _read_text(path: str) -> Optional[str]:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    decoded = decode_text(data)
    return decoded[0] if decoded else None


def _diff_hunk(old: str, new: str, label: str, hid: str) -> Optional[dict]:
    """One hunk view from a diff; later ``@@`` headers are folded into its lines."""
    diff = unified_diff(old, new, label)
    lines = diff.splitlines()[2:]
    if not lines or not lines[0].startswith("@@"):
        return None
    return {"id": hid, "file": label, "header": lines[0], "lines": lines[1:]}


def _path_label(args: dict, cwd: str) -> Tuple[str, str]:
    raw = args.get("path")
    if not isinstance(raw, str) or not raw:
        raise ToolError("missing path")
    path = os.path.realpath(expand_path(raw, cwd))
    return path, rel_label(path, os.path.realpath(cwd))


def parse_patch(patch: str) -> Optional[List[dict]]:
    """Split a unified diff into file sections ``{header: [lines], file, hunks: [[lines]]}``."""
    lines = patch.splitlines()
    sections: List[dict] = []
    cur = None
    i = 0
    while i < len(lines):
        line = lines[i]
        pair = line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")
        if line.startswith("diff --git ") or (pair and (
                cur is None or cur["hunks"] or any(h.startswith("+++ ") for h in cur["header"]))):
            cur = {"header": [], "file": None, "hunks": []}
            sections.append(cur)
        if cur is None:
            i += 1
            continue  # preamble text before the first file
        if line.startswith("@@"):
            cur["hunks"].append([line])
        elif cur["hunks"]:
            cur["hunks"][-1].append(line)
        else:
            cur["header"].append(line)
            if line.startswith("+++ "):
                name = _strip_label(line[4:])
                if name != "/dev/null":
                    cur["file"] = name[2:] if name.startswith("b/") else name
            elif line.startswith("--- ") and cur["file"] is None:
                name = _strip_label(line[4:])
                if name != "/dev/null":
                    cur["file"] = name[2:] if name.startswith("a/") else name
        i += 1
    if not sections or not any(s["hunks"] for s in sections):
        return None
    for s in sections:
        if s["file"] is None:
            return None
    return sections


def plan_hunks(name: str, args, cwd: str) -> Optional[List[dict]]:
    """Hunk views for a gated edit call, or None when the call cannot be split."""
    try:
        return _plan(name, args, cwd)
    except Exception:
        return None


def _plan(name: str, args, cwd: str) -> Optional[List[dict]]:
    if not isinstance(args, dict):
        return None
    if name == "write":
        content = args.get("content")
        if not isinstance(content, str):
            return None
        path, label = _path_label(args, cwd)
        old = _read_text(path) if os.path.exists(path) else ""
        if old is None or old == content:
            return None
        hunk = _diff_hunk(old, content, label, "f0h1")
        return [hunk] if hunk else None
    if name in ("str_replace", "edit", "hashline_edit"):
        path, label = _path_label(args, cwd)
        text = _read_text(path)
        if text is None:
            return None
        views = []
        if name == "hashline_edit":
            edits = args.get("edits")
            if not isinstance(edits, list) or not edits:
                return None
            news = [apply_edits(text, [parse_edit(e)]) for e in edits]
        else:
            news = [replace_all(text, [e]) for e in validate_str_edits(args)]
        for i, new in enumerate(news):
            hunk = _diff_hunk(text, new, label, f"f0h{i + 1}")
            if hunk is None:
                return None
            views.append(hunk)
        return views
    if name == "apply_patch":
        patch = args.get("patch")
        if not isinstance(patch, str):
            return None
        sections = parse_patch(patch)
        if sections is None:
            return None
        views = []
        for fi, sec in enumerate(sections):
            for hi, hunk in enumerate(sec["hunks"]):
                views.append({"id": f"f{fi}h{hi + 1}", "file": sec["file"], "header": hunk[0],
                              "lines": hunk[1:]})
        return views
    return None


def filter_arguments(name: str, args: dict, hunk_ids) -> Tuple[dict, List[str], List[str]]:
    """Keep only approved hunks. Raises ValueError with upstream's texts when that is impossible."""
    approved = set(hunk_ids or ())
    if not approved:
        raise ValueError("no hunks were approved; deny the call instead")
    if name == "write":
        ids = ["f0h1"]
        new_args = copy.deepcopy(args)
    elif name in ("str_replace", "edit", "hashline_edit"):
        edits = args.get("edits") if isinstance(args, dict) else None
        if not isinstance(edits, list):
            raise ValueError("call has no edits array")
        ids = [f"f0h{i + 1}" for i in range(len(edits))]
        new_args = copy.deepcopy(args)
        new_args["edits"] = [e for i, e in enumerate(edits) if ids[i] in approved]
    elif name == "apply_patch":
        patch = args.get("patch") if isinstance(args, dict) else None
        sections = parse_patch(patch) if isinstance(patch, str) else None
        if sections is None:
            raise ValueError("could not split the patch into hunks")
        ids, out = [], []
        for fi, sec in enumerate(sections):
            kept = []
            for hi, hunk in enumerate(sec["hunks"]):
                hid = f"f{fi}h{hi + 1}"
                ids.append(hid)
                if hid in approved:
                    kept.append(hunk)
            if kept:
                out.extend(sec["header"])
                for hunk in kept:
                    out.extend(hunk)
        new_args = copy.deepcopy(args)
        new_args["patch"] = "\n".join(out) + "\n"
    else:
        raise ValueError(f"{name} does not support hunk selection")
    applied = [h for h in ids if h in approved]
    rejected = [h for h in ids if h not in approved]
    if not applied:
        raise ValueError("no hunks were approved; deny the call instead")
    return new_args, applied, rejected


def annotate_result(result: dict, applied: List[str], rejected: List[str]) -> dict:
    """Tell the model which hunks ran (added to the tool's result object)."""
    result["applied_hunks"] = list(applied)
    result["rejected_hunks"] = list(rejected)
    if rejected:
        total = len(applied) + len(rejected)
        result["note"] = f"user rejected {len(rejected)} of {total} hunks; the rejected hunks were NOT applied"
    return result


def filter_error_result(exc: Exception) -> dict:
    return {"error": FILTER_FAILED.format(exc)}
