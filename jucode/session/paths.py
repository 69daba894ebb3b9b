"""Where sessions live on disk, and how ids look.

Upstream keys the per-directory folder by a 64-bit FNV-1a hash of the cwd string so that
sessions of different projects never mix and a resume picker only scans one small folder.
Keeping the exact hash and id formats lets our engine open sessions written by upstream
(and vice versa).
"""

from __future__ import annotations

import os
import time

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
_MASK = (1 << 64) - 1


def fnv1a64(data: bytes) -> int:
    h = FNV_OFFSET
    for b in data:
        h ^= b
        h = (h * FNV_PRIME) & _MASK
    return h


def _lossy_utf8(path) -> bytes:
    """Mirror Rust's ``to_string_lossy``: undecodable bytes become U+FFFD."""
    if isinstance(path, bytes):
        raw = path
    else:
        raw = os.fsencode(os.fspath(path))
    return raw.decode("utf-8", "replace").encode("utf-8")


def cwd_hash(cwd) -> str:
    return f"{fnv1a64(_lossy_utf8(cwd)):016x}"


def sessions_dir(profile_dir, cwd) -> str:
    """``<profile>/sessions/<16-hex FNV-1a-64 of cwd>``."""
    return os.path.join(os.fspath(profile_dir), "sessions", cwd_hash(cwd))


def new_session_id(now_ns: int | None = None) -> str:
    """``s`` + hex(unix seconds) + 8 hex digits of the sub-second nanoseconds."""
    ns = time.time_ns() if now_ns is None else now_ns
    secs, nanos = divmod(ns, 1_000_000_000)
    return f"s{secs:x}{nanos:08x}"


def fmt_entry_id(entry_id: int | None) -> str | None:
    return None if entry_id is None else f"e{entry_id}"


def parse_entry_id(text) -> int | None:
    """``e12`` / ``ee12`` / ``12`` / 12 → 12; anything else → None."""
    if isinstance(text, bool):
        return None
    if isinstance(text, int):
        return text
    if not isinstance(text, str):
        return None
    s = text.strip().lstrip("e")
    if not s.isdigit() or not s.isascii():
        return None
    return int(s)


def journal_path(directory: str, session_id: str) -> str:
    return os.path.join(directory, f"{session_id}.jsonl")


def sidecar_path(directory: str, session_id: str) -> str:
    return os.path.join(directory, f"{session_id}.json")


def lock_path(directory: str, session_id: str) -> str:
    return os.path.join(directory, f"{session_id}.lock")
