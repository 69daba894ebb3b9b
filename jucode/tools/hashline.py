"""Hashline anchors (``N#HH:line``) and the ``hashline_edit`` tool (upstream §5.5, exact).

Every line gets a 2-letter hash of its content, so an edit that names ``LINE#HASH`` fails
loudly when the line moved or changed instead of silently editing the wrong place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Optional

from .base import ToolContext, ToolError
from .checkpoints import auto_checkpoint
from .common import get_str, rel_label, remember, resolve, write_bytes
from .diffs import unified_diff
from .textcodec import encode_text, read_for_edit
from .xxhash32 import xxh32

ALPHABET = "ZPMQVRWSNKTXJBYH"
_PREFIX = re.compile(r"^\s*[>+\-]*\s*\d+\s*#[" + ALPHABET + r"]{2}:")
ANCHOR_MAX_LINES = 12


def line_hash(line: str, number: int) -> str:
    norm = line.rstrip("\r").rstrip()
    seed = 0 if any(ch.isalnum() for ch in norm) else number
    v = xxh32(norm.encode("utf-8", "surrogatepass"), seed) & 0xFF
    return ALPHABET[v >> 4] + ALPHABET[v & 0xF]


def format_line(number: int, line: str) -> str:
    return f"{number}#{line_hash(line, number)}:{line}"


def format_hashlines(lines: List[str], first: int) -> str:
    """``lines`` keep their own newline (keepends); the hash ignores it."""
    out = []
    for i, line in enumerate(lines):
        body = line[:-1] if line.endswith("\n") else line
        out.append(f"{first + i}#{line_hash(body, first + i)}:{line}")
    return "".join(out)


@dataclass
class Anchor:
    line: int
    hash: str


def parse_anchor(raw: str) -> Anchor:
    text = raw.lstrip()
    while text and text[0] in ">+-":
        text = text[1:].lstrip()
    text = text.rstrip()
    if "#" not in text:
        raise ToolError(f'[E_BAD_REF] Invalid line reference "{raw}". Expected LINE#HASH.')
    num, rest = text.split("#", 1)
    num = num.strip()
    if not num.isdigit() or not num.isascii():
        raise ToolError(f'[E_BAD_REF] Invalid line reference "{raw}". Expected numeric LINE#HASH.')
    if int(num) < 1:
        raise ToolError(f'[E_BAD_REF] Line number must be >= 1 in "{raw}".')
    h = rest.split(":", 1)[0].strip()
    if len(h) != 2 or any(c not in ALPHABET for c in h):
        raise ToolError(f'[E_BAD_REF] Invalid line reference "{raw}": hash must be exactly 2 '
                        f'characters from {ALPHABET}.')
    return Anchor(int(num), h)


def parse_lines(value) -> List[str]:
    if value is None:
        raise ToolError("each hashline edit requires lines")
    if isinstance(value, str):
        text = value.replace("\r\n", "\n").replace("\r", "\n")
        if text.endswith("\n"):
            text = text[:-1]
        lines = text.split("\n")
    elif isinstance(value, list):
        if not all(isinstance(x, str) for x in value):
            raise ToolError("lines array must contain only strings")
        lines = list(value)
    else:
        raise ToolError("lines must be a string or an array of strings")
    for line in lines:
        if _PREFIX.match(line):
            raise ToolError("[E_INVALID_PATCH] lines must contain literal file content, not LINE#HASH or "
                            f'diff prefixes. Offending line: "{line}"')
    return lines


@dataclass
class Edit:
    op: str
    pos: Optional[Anchor]
    end: Optional[Anchor]
    lines: List[str]


def parse_edit(raw) -> Edit:
    if not isinstance(raw, dict):
        raise ToolError("each hashline edit must be an object")
    op = raw.get("op")
    if not isinstance(op, str) or not op:
        raise ToolError("each hashline edit requires op")
    if op not in ("replace", "append", "prepend"):
        raise ToolError(f'[E_BAD_OP] Unknown edit op "{op}". Expected replace, append, or prepend.')
    lines = parse_lines(raw.get("lines"))
    pos = parse_anchor(raw["pos"]) if isinstance(raw.get("pos"), str) and raw["pos"].strip() else None
    end = parse_anchor(raw["end"]) if isinstance(raw.get("end"), str) and raw["end"].strip() else None
    if op == "replace" and pos is None:
        raise ToolError("[E_BAD_OP] Replace requires a pos anchor.")
    if op != "replace" and end is not None:
        raise ToolError(f"[E_BAD_OP] {op} does not support an end anchor.")
    if op != "replace" and not lines:
        raise ToolError(f"[E_BAD_OP] {op} requires at least one line.")
    if op == "replace" and end is not None and pos.line > end.line:
        raise ToolError(f"[E_BAD_OP] Range start line {pos.line} must be <= end line {end.line}.")
    return Edit(op, pos, end, lines)


def _stale_report(file_lines: List[str], stale: List[int]) -> str:
    count = len(file_lines)
    shown = set()
    for n in stale:
        shown.update(range(max(1, n - 2), min(count, n + 2) + 1))
    out = [f"[E_STALE_ANCHOR] {len(stale)} stale anchor(s). Retry with the >>> LINE#HASH lines below."]
    prev = None
    for n in sorted(shown):
        if prev is not None and n != prev + 1:
            out.append("...")
        mark = ">>> " if n in stale else "    "
        out.append(mark + format_line(n, file_lines[n - 1]))
        prev = n
    return "\n".join(out)


def apply_edits(text: str, edits: List[Edit]) -> str:
    """Apply parsed edits to ``text``; every anchor refers to the original text."""
    lines = text.split("\n")
    count = len(lines)
    starts, off = [], 0
    for line in lines:
        starts.append(off)
        off += len(line) + 1
    anchors = [a for e in edits for a in (e.pos, e.end) if a is not None]
    for a in anchors:
        if a.line > count:
            raise ToolError(f"[E_RANGE_OOB] Line {a.line} does not exist (file has {count} lines).")
    stale = sorted({a.line for a in anchors if line_hash(lines[a.line - 1], a.line) != a.hash})
    if stale:
        raise ToolError(_stale_report(lines, stale))

    def line_end(n: int) -> int:
        return starts[n - 1] + len(lines[n - 1])

    spans = []  # (start, end, text)
    for e in edits:
        body = "\n".join(e.lines)
        if e.op == "replace":
            a, b = e.pos.line, (e.end or e.pos).line
            s, t = starts[a - 1], line_end(b)
            if not e.lines:
                if b < count:
                    t += 1
                elif a > 1:
                    s -= 1
            spans.append((s, t, body))
        elif e.op == "append":
            if e.pos is None:
                if text == "" or text.endswith("\n"):
                    spans.append((len(text), len(text), body + "\n"))
                else:
                    spans.append((len(text), len(text), "\n" + body))
            elif e.pos.line < count:
                spans.append((starts[e.pos.line], starts[e.pos.line], body + "\n"))
            else:
                spans.append((len(text), len(text), "\n" + body))
        else:
            at = 0 if e.pos is None else starts[e.pos.line - 1]
            spans.append((at, at, body + "\n"))
    spans.sort(key=lambda s: (s[0], s[1]))
    for prev, cur in zip(spans, spans[1:]):
        if prev[0] == prev[1] and cur[0] == cur[1] and prev[0] == cur[0]:
            raise ToolError("[E_EDIT_CONFLICT] hashline edits target the same insertion boundary.")
        if cur[0] < prev[1] or (prev[0] == cur[0] and prev[1] > prev[0] and cur[1] > cur[0]):
            raise ToolError("[E_EDIT_CONFLICT] hashline edits must not overlap.")
    out = text
    for s, t, body in reversed(spans):
        out = out[:s] + body + out[t:]
    return out


def anchors_block(old: str, new: str) -> Optional[str]:
    """Fresh anchors around the changed region so the model can chain edits without a re-read."""
    a, b = old.split("\n"), new.split("\n")
    pre = 0
    while pre < min(len(a), len(b)) and a[pre] == b[pre]:
        pre += 1
    suf = 0
    while suf < min(len(a), len(b)) - pre and a[-1 - suf] == b[-1 - suf]:
        suf += 1
    display = b[:-1] if new.endswith("\n") else b
    if not display:
        return None
    first = pre + 1
    last = max(first, len(b) - suf)
    s = max(1, first - 2)
    e = min(len(display), last + 2)
    if e < s or e - s + 1 > ANCHOR_MAX_LINES:
        return None
    rows = [format_line(n, display[n - 1]) for n in range(s, e + 1)]
    return f"--- Anchors {s}-{e} ---\n" + "\n".join(rows)


def run_hashline_edit(args: dict, ctx: ToolContext) -> dict:
    raw_path = get_str(args, "path")
    edits_raw = args.get("edits")
    if not isinstance(edits_raw, list):
        raise ToolError("missing edits")
    if not edits_raw:
        raise ToolError("edits must not be empty")
    edits = [parse_edit(e) for e in edits_raw]
    path = resolve(ctx, raw_path, write=True)
    data, text, enc = read_for_edit(ctx, path, raw_path, "hashline_edit")
    new_text = apply_edits(text, edits)
    new_data = encode_text(new_text, enc)
    label = rel_label(path, ctx.cwd)
    auto_checkpoint(ctx, "auto-hashline-edit", [path])
    write_bytes(path, new_data)
    remember(ctx, path, new_data)
    out = {"path": raw_path, "edits": len(edits), "written_bytes": len(new_data),
           "diff": unified_diff(text, new_text, label)}
    block = anchors_block(text, new_text)
    if block:
        out["anchors"] = block
    return out
