"""File snapshots under ``<cwd>/.jucode/checkpoints`` (the ``checkpoint`` tool, auto
checkpoints taken before every edit, and ``restore_to_timestamp`` used by /rewind).

One JSON file per checkpoint keeps them greppable and lets a crashed engine lose at most the
snapshot it was writing.
"""

from __future__ import annotations

import json
import os
import time
from typing import Iterable, List, Optional

from .base import ToolContext, ToolError
from .common import expand_path, rel_label, resolve

MAX_FILES = 200
MAX_BYTES = 64 * 1024 * 1024


def checkpoint_dir(cwd: str) -> str:
    return os.path.join(cwd, ".jucode", "checkpoints")


def _ensure_dir(cwd: str) -> str:
    d = checkpoint_dir(cwd)
    os.makedirs(d, exist_ok=True)
    ignore = os.path.join(cwd, ".jucode", ".gitignore")
    if not os.path.exists(ignore):
        with open(ignore, "w", encoding="utf-8") as fh:
            fh.write("*\n")
    return d


def _snapshot(path: str):
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return None, 0
    except OSError:
        return {"unreadable": True}, 0
    try:
        return data.decode("utf-8"), len(data)
    except UnicodeDecodeError:
        return {"unreadable": True}, 0


def create_checkpoint(cwd: str, name: str, paths: Iterable[str]) -> dict:
    """Snapshot ``paths`` (absolute) and return the stored record."""
    d = _ensure_dir(cwd)
    nanos = time.time_ns()
    while os.path.exists(os.path.join(d, f"cp-{nanos}.json")):
        nanos += 1
    files, total, seen = [], 0, set()
    for p in paths:
        if p in seen:
            continue
        seen.add(p)
        content, size = _snapshot(p)
        files.append({"path": rel_label(p, cwd), "content": content})
        total += size
    record = {"id": f"cp-{nanos}", "name": name, "created_at": nanos // 1_000_000_000,
              "files": files, "bytes": total}
    tmp = os.path.join(d, f".cp-{nanos}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    os.replace(tmp, os.path.join(d, f"cp-{nanos}.json"))
    _prune(d)
    return record


def auto_checkpoint(ctx: ToolContext, name: str, paths: Iterable[str]) -> None:
    """Best effort: a failing snapshot must never block the edit it protects."""
    try:
        create_checkpoint(ctx.cwd, name, list(paths))
    except OSError:
        import logging
        logging.getLogger(__name__).warning("auto checkpoint %s failed", name, exc_info=True)


def _files(d: str) -> List[str]:
    try:
        names = [n for n in os.listdir(d) if n.startswith("cp-") and n.endswith(".json")]
    except FileNotFoundError:
        return []
    return sorted(names, key=lambda n: int(n[3:-5]) if n[3:-5].isdigit() else 0, reverse=True)


def _prune(d: str) -> None:
    kept, total = 0, 0
    for n in _files(d):
        path = os.path.join(d, n)
        try:
            size = os.path.getsize(path)
        except OSError:
            continue
        if kept >= MAX_FILES or total + size > MAX_BYTES and kept > 0:
            try:
                os.remove(path)
            except OSError:
                pass
            continue
        kept += 1
        total += size


def _load(d: str, name: str) -> Optional[dict]:
    try:
        with open(os.path.join(d, name), encoding="utf-8") as fh:
            rec = json.load(fh)
        return rec if isinstance(rec, dict) else None
    except (OSError, ValueError):
        return None


def list_checkpoints(cwd: str) -> List[dict]:
    d = checkpoint_dir(cwd)
    out = []
    for n in _files(d):
        rec = _load(d, n)
        if rec is None:
            continue
        out.append({"id": rec.get("id"), "name": rec.get("name"), "created_at": rec.get("created_at"),
                    "files": len(rec.get("files") or []), "bytes": rec.get("bytes", 0)})
    return out


def _apply_file(cwd: str, entry: dict, restored: list, removed: list, skipped: list) -> None:
    label = entry.get("path")
    if not isinstance(label, str):
        return
    target = expand_path(label, cwd)
    content = entry.get("content")
    if isinstance(content, str):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as fh:
            fh.write(content.encode("utf-8"))
        restored.append(label)
    elif content is None:
        if os.path.lexists(target):
            os.remove(target)
            removed.append(label)
    else:
        skipped.append(label)


def restore_checkpoint(cwd: str, cp_id: str) -> dict:
    d = checkpoint_dir(cwd)
    if not cp_id.startswith("cp-") or "/" in cp_id or os.sep in cp_id:
        raise ToolError(f"unknown checkpoint id: {cp_id}")
    rec = _load(d, cp_id + ".json")
    if rec is None:
        raise ToolError(f"unknown checkpoint id: {cp_id}")
    restored, removed, skipped = [], [], []
    for entry in rec.get("files") or []:
        if isinstance(entry, dict):
            _apply_file(cwd, entry, restored, removed, skipped)
    out = {"id": cp_id, "restored": restored, "removed": removed}
    if skipped:
        out["skipped"] = skipped
        out["warning"] = "some files were unreadable when the checkpoint was taken and were not restored"
    return out


def restore_to_timestamp(cwd: str, t: float) -> dict:
    """Undo everything since ``t`` (unix seconds): for each path the earliest snapshot taken at
    or after ``t`` wins, because it holds the content from before the first later edit."""
    d = checkpoint_dir(cwd)
    recs = []
    for n in _files(d):
        rec = _load(d, n)
        if rec and isinstance(rec.get("created_at"), (int, float)) and rec["created_at"] >= t:
            recs.append((int(n[3:-5]) if n[3:-5].isdigit() else 0, rec))
    recs.sort(key=lambda pair: pair[0])
    chosen = {}
    for _, rec in recs:
        for entry in rec.get("files") or []:
            if isinstance(entry, dict) and isinstance(entry.get("path"), str):
                chosen.setdefault(entry["path"], entry)
    restored, removed, skipped = [], [], []
    for entry in chosen.values():
        try:
            _apply_file(cwd, entry, restored, removed, skipped)
        except OSError:
            skipped.append(entry["path"])
    return {"checkpoints": len(recs), "restored": restored, "removed": removed, "skipped": skipped}


def run_checkpoint(args: dict, ctx: ToolContext) -> dict:
    action = args.get("action")
    if action == "create":
        paths = args.get("paths")
        if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
            raise ToolError("checkpoint create requires paths")
        name = args.get("name") if isinstance(args.get("name"), str) and args.get("name") else "manual"
        real = [resolve(ctx, p) for p in paths]
        rec = create_checkpoint(ctx.cwd, name, real)
        return {"id": rec["id"], "name": rec["name"], "files": len(rec["files"]), "bytes": rec["bytes"]}
    if action == "list":
        return {"checkpoints": list_checkpoints(ctx.cwd)}
    if action == "restore":
        cp_id = args.get("id")
        if not isinstance(cp_id, str) or not cp_id:
            raise ToolError("checkpoint restore requires id")
        return restore_checkpoint(ctx.cwd, cp_id)
    raise ToolError("checkpoint action must be create, list, or restore")
