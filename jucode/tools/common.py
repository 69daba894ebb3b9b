"""Helpers shared by the builtin tools: argument coercion, workspace paths, read-before-edit.

Upstream's tools validate every argument themselves and answer with short fixed texts; keeping
those texts here means each tool stays a thin function and the model sees the same wording
everywhere.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any, Optional

from .base import ToolContext, ToolError

ESCAPE_TAIL = "File tools only operate on paths inside the workspace."

MSG_NOT_READ = {
    "edit": "edit requires reading this file first so oldText matches bytes on disk",
    "hashline_edit": ("hashline_edit requires reading this file first and copying LINE#HASH anchors "
                      "from read().hashlines"),
    "write": ("write requires reading an existing file first before overwriting it; new files can be "
              "written without a prior read"),
}
MSG_CHANGED = ("file changed on disk since you last read it (another agent, the user, or a command "
               "modified it); read it again and redo the edit against the current content")

# Caps so absurd integers from a model never turn into giant allocations or sleeps.
MAX_INT = 2 ** 53


def get_str(args: dict, key: str, what: Optional[str] = None, required: bool = True) -> Optional[str]:
    """A string argument; missing or non-string gives upstream's ``missing <thing>``."""
    value = args.get(key)
    if isinstance(value, str):
        return value
    if required:
        raise ToolError(f"missing {what or key}")
    return None


def get_int(args: dict, key: str, default: Optional[int] = None) -> Optional[int]:
    """A non-negative integer argument (integral floats accepted, like serde's u64 coercion)."""
    value = args.get(key)
    if value is None:
        return default
    if isinstance(value, bool):
        raise ToolError(f"{key} must be a non-negative integer, got {_show(value)}")
    if isinstance(value, float) and value.is_integer() and value >= 0:
        value = int(value)
    if isinstance(value, int) and value >= 0:
        return min(value, MAX_INT)
    raise ToolError(f"{key} must be a non-negative integer, got {_show(value)}")


def _show(value: Any) -> str:
    import json
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def expand_path(raw: str, cwd: str) -> str:
    """``~`` expansion with HOME, relative paths joined to cwd (no symlink resolution yet)."""
    if raw == "~" or raw.startswith("~/"):
        home = os.environ.get("HOME") or os.path.expanduser("~")
        raw = home + raw[1:]
    if not os.path.isabs(raw):
        raw = os.path.join(cwd, raw)
    return os.path.normpath(raw)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def workspace_root(ctx: ToolContext) -> str:
    return os.path.realpath(ctx.write_root or ctx.cwd)


def resolve(ctx: ToolContext, raw: str, write: bool = False) -> str:
    """Resolve a tool path (symlinks included) and enforce the workspace boundary.

    Reads may also use the extra read roots (skills, sandbox dirs) listed in
    ``ctx.extra["read_roots"]``; writes only the workspace or ``ctx.extra["write_roots"]``.
    """
    if "\0" in raw:
        raise ToolError("path must not contain NUL bytes")
    real = os.path.realpath(expand_path(raw, ctx.cwd))
    ws = workspace_root(ctx)
    roots = [ws] + [os.path.realpath(r) for r in ctx.extra.get("write_roots", ())]
    if not write:
        roots.append(os.path.realpath(ctx.cwd))
        roots += [os.path.realpath(r) for r in ctx.extra.get("read_roots", ())]
    if any(_inside(real, r) for r in roots):
        return real
    raise ToolError(f"path escapes the workspace: {raw} resolves outside {ws}. {ESCAPE_TAIL}")


def rel_label(path: str, cwd: str) -> str:
    """Path label used in diffs and checkpoints: relative to cwd when inside it."""
    root = os.path.realpath(cwd)
    if _inside(path, root) and path != root:
        return os.path.relpath(path, root).replace(os.sep, "/")
    return path


def fingerprint(data: bytes) -> int:
    """64-bit content hash used by read-before-edit (cheap even for large files)."""
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


def state_key(path: str) -> str:
    return path.lower() if os.name == "nt" else path


def remember(ctx: ToolContext, path: str, data: bytes) -> None:
    ctx.read_state[state_key(path)] = fingerprint(data)


def check_fresh(ctx: ToolContext, path: str, data: bytes, tool: str) -> None:
    """Raise upstream's read-before-edit errors when the file was never read or has changed."""
    known = ctx.read_state.get(state_key(path))
    if known is None:
        raise ToolError(MSG_NOT_READ[tool])
    if known != fingerprint(data):
        raise ToolError(MSG_CHANGED)


def write_bytes(path: str, data: bytes) -> None:
    """Write via a temp file + rename so a crash never leaves half a file behind."""
    try:
        _check_length(path)
        _make_parents(os.path.dirname(path))
    except OSError as exc:
        raise ToolError(f"failed to create parent directories of {path}: {exc.strerror or exc}")
    tmp = f"{path}.jucode-tmp-{os.getpid()}"
    mode = None
    try:
        mode = os.stat(path).st_mode & 0o7777
    except OSError:
        pass
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise ToolError(f"failed to write {path}: {exc.strerror or exc}")


def _make_parents(parent: str) -> None:
    """``os.makedirs`` without recursion: a model-supplied path thousands of levels deep must
    end in an OS error (name too long), not a RecursionError."""
    missing = []
    cur = parent
    while cur and not os.path.isdir(cur):
        missing.append(cur)
        up = os.path.dirname(cur)
        if up == cur:
            break
        cur = up
    for d in reversed(missing):
        try:
            os.mkdir(d)
        except FileExistsError:
            if not os.path.isdir(d):
                raise


def _check_length(path: str) -> None:
    """Refuse over-long paths before creating anything, so a failing write leaves no half-built
    directory chain thousands of levels deep behind."""
    import errno
    try:
        limit = os.pathconf("/", "PC_PATH_MAX")
    except (OSError, ValueError, AttributeError):
        limit = 4096
    if len(os.fsencode(path)) >= limit:
        raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG))
