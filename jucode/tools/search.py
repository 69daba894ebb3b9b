"""Read-only navigation tools: ``ls``, ``ripgrep`` and ``outline``.

``ripgrep`` uses the real ``rg`` when it is on PATH; otherwise a pure-Python walker produces
the same line format (``path:line:text``, ``path-line-text`` for context, ``--`` between
groups) so the model never notices which one ran.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess
from typing import List, Optional

from .base import ToolContext, ToolError
from .common import get_int, get_str, resolve

LS_DEFAULT_LIMIT = 1000
OUTLINE_DEFAULT_LIMIT = 200
RG_TIMEOUT = 30
LARGE_LINES = 200
LARGE_BYTES = 128 * 1024
SYMBOL_PREFIXES = ("fn ", "pub fn ", "struct ", "pub struct ", "enum ", "pub enum ", "trait ",
                   "pub trait ", "impl ", "func ", "type ", "class ", "export function ",
                   "function ", "export class ")


def run_ls(args: dict, ctx: ToolContext) -> dict:
    raw = args.get("path") if isinstance(args.get("path"), str) and args.get("path") else "."
    limit = get_int(args, "limit", LS_DEFAULT_LIMIT)
    path = resolve(ctx, raw)
    try:
        names = os.listdir(path)
    except NotADirectoryError:
        raise ToolError(f"not a directory: {raw}")
    except OSError as exc:
        raise ToolError(f"failed to list {raw}: {exc.strerror or exc}")
    entries = sorted(n + "/" if os.path.isdir(os.path.join(path, n)) else n for n in names)
    truncated = len(entries) > limit
    return {"path": raw, "entries": entries[:limit], "truncated": truncated}


def run_outline(args: dict, ctx: ToolContext) -> dict:
    raw = get_str(args, "path")
    limit = get_int(args, "limit", OUTLINE_DEFAULT_LIMIT)
    path = resolve(ctx, raw)
    try:
        with open(path, "rb") as fh:
            text = fh.read().decode("utf-8", "replace")
    except IsADirectoryError:
        raise ToolError(f"path is a directory: {raw}")
    except OSError as exc:
        raise ToolError(f"failed to read {raw}: {exc.strerror or exc}")
    symbols, truncated = [], False
    for i, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        if stripped.startswith(SYMBOL_PREFIXES):
            if len(symbols) >= limit:
                truncated = True
                break
            symbols.append({"line": i, "symbol": stripped.rstrip()})
    return {"path": raw, "symbols": symbols, "truncated": truncated}


def _rg_args(pattern, path, glob, ignore_case, literal, context) -> List[str]:
    cmd = ["rg", "--line-number", "--no-heading", "--color", "never"]
    if ignore_case:
        cmd.append("--ignore-case")
    if literal:
        cmd.append("--fixed-strings")
    if context:
        cmd += ["--context", str(context)]
    if glob:
        cmd += ["--glob", glob]
    return cmd + ["-e", pattern, path]


def run_ripgrep(args: dict, ctx: ToolContext) -> dict:
    pattern = get_str(args, "pattern")
    raw = args.get("path") if isinstance(args.get("path"), str) and args.get("path") else "."
    glob = args.get("glob") if isinstance(args.get("glob"), str) and args.get("glob") else None
    ignore_case = args.get("ignoreCase") is True
    literal = args.get("literal") is True
    context = min(get_int(args, "contextLines", 0), 1000)
    limit = get_int(args, "limit")
    resolve(ctx, raw)
    rg = shutil.which("rg")
    if rg:
        cmd = _rg_args(pattern, raw, glob, ignore_case, literal, context)
        try:
            proc = subprocess.run(cmd, cwd=ctx.cwd, stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=RG_TIMEOUT)
        except subprocess.TimeoutExpired:
            return {"pattern": pattern, "path": raw, "exit_code": None, "stdout": "", "stderr": "",
                    "timed_out": True, "truncated": False, "warning": "ripgrep timed out",
                    "suggestion": "narrow the path or glob"}
        code = proc.returncode
        stdout = proc.stdout.decode("utf-8", "replace")
        stderr = proc.stderr.decode("utf-8", "replace")
    else:
        try:
            stdout = fallback_search(ctx.cwd, pattern, raw, glob, ignore_case, literal, context,
                                     ctx.interrupt)
        except (re.error, RecursionError, OverflowError) as exc:
            # a pathological pattern (thousands of nested groups) exhausts the stdlib parser's
            # recursion: answer like rg's own parse error, not a crash
            reason = exc if isinstance(exc, re.error) else "pattern is too deeply nested or too large"
            return {"pattern": pattern, "path": raw, "exit_code": 2, "stdout": "",
                    "stderr": f"regex parse error: {reason}", "timed_out": False, "truncated": False}
        code, stderr = (0 if stdout else 1), ""
    if code == 1:
        code, stdout = 0, "no matches found"
    truncated = False
    lines = stdout.splitlines()
    if limit is not None and len(lines) > limit:
        stdout = "\n".join(lines[:limit]) + ("\n" if limit else "")
        truncated = True
    res = {"pattern": pattern, "path": raw, "exit_code": code, "stdout": stdout, "stderr": stderr,
           "timed_out": False, "truncated": truncated}
    if truncated:
        res["warning"] = "ripgrep output was truncated"
        res["suggestion"] = "narrow the pattern, path or glob, or raise limit"
    elif limit is None and (len(lines) > LARGE_LINES or len(stdout.encode("utf-8")) > LARGE_BYTES):
        res["warning"] = "large ripgrep output without a line limit"
        res["suggestion"] = "pass limit, a narrower path, or a glob"
    return res


def _glob_ok(rel: str, glob: Optional[str]) -> bool:
    if not glob:
        return True
    neg = glob.startswith("!")
    g = glob[1:] if neg else glob
    target = rel if "/" in g else rel.rsplit("/", 1)[-1]
    hit = fnmatch.fnmatch(target, g) or (g.startswith("**/") and fnmatch.fnmatch(rel, g[3:]))
    return not hit if neg else hit


def _walk(root: str):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "node_modules")
        for name in sorted(filenames):
            if not name.startswith("."):
                yield os.path.join(dirpath, name)


def fallback_search(cwd, pattern, raw_path, glob, ignore_case, literal, context, interrupt=None) -> str:
    """Pure-Python stand-in for rg (hidden files skipped, binary files skipped)."""
    flags = re.IGNORECASE if ignore_case else 0
    rx = re.compile(re.escape(pattern) if literal else pattern, flags)
    base = os.path.join(cwd, raw_path) if not os.path.isabs(raw_path) else raw_path
    single = os.path.isfile(base)
    files = [base] if single else _walk(base)
    out: List[str] = []
    for f in files:
        if interrupt is not None and interrupt.is_set():
            break
        rel_to_base = os.path.relpath(f, base).replace(os.sep, "/") if not single else os.path.basename(f)
        if not single and not _glob_ok(rel_to_base, glob):
            continue
        try:
            with open(f, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        if b"\0" in data[:8192]:
            continue
        text_lines = data.decode("utf-8", "replace").splitlines()
        hits = [i for i, line in enumerate(text_lines) if rx.search(line)]
        if not hits:
            continue
        label = "" if single else (raw_path.rstrip("/") + "/" + rel_to_base if raw_path != "." else
                                   "./" + rel_to_base)
        _emit(out, label, text_lines, hits, context)
    return "".join(out)


def _emit(out: List[str], label: str, lines: List[str], hits: List[int], context: int) -> None:
    pre = f"{label}:" if label else ""
    ctx_pre = f"{label}-" if label else ""
    if not context:
        for i in hits:
            out.append(f"{pre}{i + 1}:{lines[i]}\n")
        return
    hitset = set(hits)
    shown = sorted({j for i in hits for j in range(max(0, i - context), min(len(lines), i + context + 1))})
    if out:
        out.append("--\n")
    prev = None
    for j in shown:
        if prev is not None and j != prev + 1:
            out.append("--\n")
        out.append(f"{pre if j in hitset else ctx_pre}{j + 1}{':' if j in hitset else '-'}{lines[j]}\n")
        prev = j
