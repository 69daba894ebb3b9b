"""Read-only navigation tools: ``ls``, ``ripgrep`` and ``outline``.

``ripgrep`` runs the real ``rg`` (upstream's exact argv) when it is on PATH; otherwise the
pure-Python walker in ``search_fallback`` produces the same result for the same inputs: same
line format, same ``no matches found``/exit codes, same ignore-file, hidden-file, glob and
binary rules, and the post-processing here (``limit`` truncation and hints) is shared by both.
The precise remaining differences (file order, regex dialect, global git excludes) are listed
in ``search_fallback``'s docstring.

Forcing the fallback (tests, or a broken rg): set ``JUCODE_NO_RG=1`` in the environment, or
``FORCE_FALLBACK = True`` on this module. ``.ci/install-tools.sh`` installs Debian's ripgrep.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from typing import List, Optional

from .base import ToolContext, ToolError
from . import search_fallback
from .common import get_int, get_str, resolve

LS_DEFAULT_LIMIT = 1000
OUTLINE_DEFAULT_LIMIT = 200
RG_TIMEOUT = 30
LARGE_LINES = 200
LARGE_BYTES = 128 * 1024
# Set True (or export JUCODE_NO_RG=1) to use the pure-Python search even when rg exists.
FORCE_FALLBACK = False
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


def rg_binary() -> Optional[str]:
    """Path of the rg to run, or None when the fallback must be used."""
    if FORCE_FALLBACK or os.environ.get("JUCODE_NO_RG", "") not in ("", "0"):
        return None
    return shutil.which("rg")


def _timed_out(pattern: str, raw: str) -> dict:
    return {"pattern": pattern, "path": raw, "exit_code": None, "stdout": "", "stderr": "",
            "timed_out": True, "truncated": False, "warning": "ripgrep timed out",
            "suggestion": "narrow the path or glob"}


def run_ripgrep(args: dict, ctx: ToolContext) -> dict:
    pattern = get_str(args, "pattern")
    raw = args.get("path") if isinstance(args.get("path"), str) and args.get("path") else "."
    glob = args.get("glob") if isinstance(args.get("glob"), str) and args.get("glob") else None
    ignore_case = args.get("ignoreCase") is True
    literal = args.get("literal") is True
    context = min(get_int(args, "contextLines", 0), 1000)
    limit = get_int(args, "limit")
    resolve(ctx, raw)
    rg = rg_binary()
    if rg:
        cmd = _rg_args(pattern, raw, glob, ignore_case, literal, context)
        cmd[0] = rg
        try:
            proc = subprocess.run(cmd, cwd=ctx.cwd, stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=RG_TIMEOUT)
        except subprocess.TimeoutExpired:
            return _timed_out(pattern, raw)
        code = proc.returncode
        stdout = proc.stdout.decode("utf-8", "replace")
        stderr = proc.stderr.decode("utf-8", "replace")
    else:
        try:
            code, stdout, stderr = search_fallback.search(ctx.cwd, pattern, raw, glob, ignore_case,
                                                          literal, context, ctx.interrupt, RG_TIMEOUT)
        except search_fallback.SearchTimeout:
            return _timed_out(pattern, raw)
        except (re.error, RecursionError, OverflowError) as exc:
            # a pathological pattern (thousands of nested groups) exhausts the stdlib parser's
            # recursion: answer like rg's own parse error, not a crash
            reason = exc if isinstance(exc, re.error) else "pattern is too deeply nested or too large"
            return {"pattern": pattern, "path": raw, "exit_code": 2, "stdout": "",
                    "stderr": f"regex parse error: {reason}", "timed_out": False, "truncated": False}
    return shape_result(pattern, raw, code, stdout, stderr, limit)


def shape_result(pattern: str, raw: str, code: int, stdout: str, stderr: str,
                 limit: Optional[int]) -> dict:
    """rg's (exit code, stdout, stderr) → the tool result; shared by rg and the fallback so
    truncation and hints can never differ between them. Lines split on ``\\n`` only: a CRLF
    or form-feed inside a matched line is content, not a line break."""
    if code == 1:
        code, stdout = 0, "no matches found"
    truncated = False
    lines = stdout.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
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
