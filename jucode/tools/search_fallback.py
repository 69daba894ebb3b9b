"""Pure-Python stand-in for ``rg`` used by the ``ripgrep`` tool when ripgrep is not installed.

It exists so the model sees the same result for the same inputs whichever engine ran; the
rules below were checked against ripgrep 13 and mirror its defaults:

* walking: hidden entries (``.name``) and symlinks below the search root are skipped; ignore
  files are honoured at every level and in the parents of the search root — ``.gitignore`` only
  inside a git repository (a ``.git`` at or above the search root), ``.ignore``/``.rgignore``
  always; gitignore syntax (``!`` negation, trailing ``/`` for directories, anchoring by a
  ``/``, ``*``, ``?``, ``[...]``, ``**``), deeper files and later lines win;
* ``--glob``: gitignore syntax matched against the path relative to the engine cwd (as rg does:
  its override root is the current directory); a matching glob beats ignore files and the hidden
  rule, ``!glob`` excludes files and whole directories, a positive glob never prunes directories;
  an explicitly named file is searched regardless of the glob;
* binary files (a NUL byte) are skipped while walking; an explicitly named binary file that
  matches prints ``binary file matches (found "\\0" byte around offset N)``;
* output: ``label:line:text``, ``label-line-text`` for context, ``--`` between groups and files,
  no label for a single explicit file, ``\\r`` of CRLF lines kept, lines split on ``\\n`` only;
* errors: a missing path → exit 2 and ``<path>: No such file or directory (os error 2)``.

Known, documented differences from real rg: files come in sorted path order (rg's parallel walker
does not promise an order); regexes use Python's ``re`` dialect, not Rust's; the global git
excludes file and ``.git/info/exclude`` are not read; a binary file is skipped whole even when
its NUL byte sits beyond rg's first 64 KiB buffer.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from typing import Iterator, List, Optional, Tuple

from ..paths import ancestors

IGNORE_FILES = (".gitignore", ".ignore", ".rgignore")


class SearchTimeout(Exception):
    """Raised when the walk runs past its deadline (rg's 30 s limit applies to both engines)."""


@dataclass
class Rule:
    rx: "re.Pattern[str]"
    negated: bool
    dir_only: bool


@dataclass
class RuleSet:
    """The rules of one ignore file; paths are matched relative to ``base`` (its directory)."""
    base: str
    rules: List[Rule] = field(default_factory=list)


def _translate(body: str) -> str:
    out, i, n = [], 0, len(body)
    while i < n:
        if body.startswith("**/", i) and (i == 0 or body[i - 1] == "/"):
            out.append("(?:.*/)?")
            i += 3
        elif body.startswith("/**", i) and i + 3 == n:
            out.append("/.*")
            i += 3
        elif body.startswith("**", i) and i == 0 and n == 2:
            out.append(".*")
            i += 2
        elif body[i] == "*":
            while i < n and body[i] == "*":
                i += 1
            out.append("[^/]*")
        elif body[i] == "?":
            out.append("[^/]")
            i += 1
        elif body[i] == "[":
            j = body.find("]", i + 2)
            if j < 0:
                out.append(re.escape("["))
                i += 1
                continue
            inner = body[i + 1:j]
            if inner.startswith("!"):
                inner = "^" + inner[1:]
            out.append("[" + inner.replace("\\", "\\\\") + "]")
            i = j + 1
        elif body[i] == "\\" and i + 1 < n:
            out.append(re.escape(body[i + 1]))
            i += 2
        else:
            out.append(re.escape(body[i]))
            i += 1
    return "".join(out)


def compile_pattern(line: str) -> Optional[Rule]:
    """One gitignore line → Rule (None for blanks, comments and patterns we cannot compile)."""
    line = line.rstrip("\n").rstrip("\r")
    if not line.endswith("\\ "):
        line = line.rstrip(" ")
    if not line or line.startswith("#"):
        return None
    negated = line.startswith("!")
    if negated:
        line = line[1:]
    elif line.startswith("\\"):
        line = line[1:]
    dir_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    body = _translate(line.lstrip("/"))
    try:
        rx = re.compile("^" + ("" if anchored else "(?:.*/)?") + body + "$")
    except re.error:
        return None
    return Rule(rx, negated, dir_only)


def load_rules(directory: str, names) -> List[RuleSet]:
    sets = []
    for name in names:
        try:
            with open(os.path.join(directory, name), encoding="utf-8", errors="replace") as fh:
                rules = [r for r in map(compile_pattern, fh) if r is not None]
        except OSError:
            continue
        if rules:
            sets.append(RuleSet(directory, rules))
    return sets


def match_rules(rule: Rule, rel: str, is_dir: bool) -> bool:
    return (is_dir or not rule.dir_only) and rule.rx.match(rel) is not None


def verdict(sets: List[RuleSet], path: str, is_dir: bool) -> Optional[bool]:
    """True = ignored, False = whitelisted by a ``!`` rule, None = no rule matched.
    Later sets (deeper directories) and later lines win, like git."""
    result = None
    for rs in sets:
        rel = os.path.relpath(path, rs.base).replace(os.sep, "/")
        if rel.startswith("../"):
            continue
        for rule in rs.rules:
            if match_rules(rule, rel, is_dir):
                result = not rule.negated
    return result


def _in_git_repo(directory: str) -> Tuple[bool, List[str]]:
    """(inside a repo?, directories from the filesystem root down to ``directory``)."""
    chain = ancestors(directory)[::-1]
    return any(os.path.exists(os.path.join(c, ".git")) for c in chain), chain


def _names(in_git: bool):
    return IGNORE_FILES if in_git else IGNORE_FILES[1:]


@dataclass
class Glob:
    """The tool's ``glob`` argument as an rg override rooted at the engine cwd."""
    rule: Rule
    root: str

    @classmethod
    def parse(cls, glob: Optional[str], cwd: str) -> Optional["Glob"]:
        if not glob:
            return None
        rule = compile_pattern(glob)
        return cls(rule, cwd) if rule is not None else None

    def decide(self, path: str, is_dir: bool) -> Optional[bool]:
        """True = include (beats ignore rules), False = exclude, None = fall through."""
        rel = os.path.relpath(path, self.root).replace(os.sep, "/")
        if rel.startswith("../"):      # outside cwd: only unanchored globs can match
            rel = path.replace(os.sep, "/").lstrip("/")
        hit = match_rules(self.rule, rel, is_dir)
        if self.rule.negated:
            return False if hit else None
        if hit:
            return True
        return None if is_dir else False


def walk(root: str, glob: Optional[Glob], deadline: float) -> Iterator[str]:
    in_git, chain = _in_git_repo(root)
    sets: List[RuleSet] = []
    for d in chain[:-1]:
        sets += load_rules(d, _names(in_git))
    yield from _walk_dir(root, sets + load_rules(root, _names(in_git)), glob, in_git, deadline)


def _walk_dir(directory: str, sets: List[RuleSet], glob, in_git, deadline) -> Iterator[str]:
    if time.monotonic() > deadline:
        raise SearchTimeout()
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.is_symlink():
            continue
        try:
            is_dir = entry.is_dir()
        except OSError:
            continue
        decided = glob.decide(entry.path, is_dir) if glob is not None else None
        if decided is False:
            continue
        if decided is None:
            if entry.name.startswith(".") or verdict(sets, entry.path, is_dir):
                continue
        if is_dir:
            yield from _walk_dir(entry.path, sets + load_rules(entry.path, _names(in_git)), glob,
                                 in_git, deadline)
        else:
            yield entry.path


def search(cwd: str, pattern: str, raw_path: str, glob: Optional[str], ignore_case: bool,
           literal: bool, context: int, interrupt=None, timeout: float = 30.0) -> Tuple[int, str, str]:
    """Run one search like ``rg``; returns (exit_code, stdout, stderr) with rg's codes
    (0 matches, 1 none, 2 error). Raises ``re.error``/``RecursionError`` for bad patterns and
    SearchTimeout past ``timeout`` seconds."""
    rx = re.compile(re.escape(pattern) if literal else pattern, re.IGNORECASE if ignore_case else 0)
    deadline = time.monotonic() + timeout
    base = raw_path if os.path.isabs(raw_path) else os.path.join(cwd, raw_path)
    if not os.path.exists(base):
        return 2, "", f"{raw_path}: No such file or directory (os error 2)\n"
    single = not os.path.isdir(base)
    files = [base] if single else walk(base, Glob.parse(glob, cwd), deadline)
    prefix = raw_path if raw_path.endswith("/") else raw_path + "/"
    out: List[str] = []
    for f in files:
        if interrupt is not None and interrupt.is_set():
            break
        if time.monotonic() > deadline:
            raise SearchTimeout()
        try:
            with open(f, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        nul = data.find(b"\0")
        lines = data.decode("utf-8", "replace").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        hits = [i for i, line in enumerate(lines) if rx.search(line)]
        if not hits:
            continue
        if nul >= 0:
            if single:
                out.append(f'binary file matches (found "\\0" byte around offset {nul})\n')
            continue
        label = "" if single else prefix + os.path.relpath(f, base).replace(os.sep, "/")
        emit(out, label, lines, hits, context)
    return (0 if out else 1), "".join(out), ""


def emit(out: List[str], label: str, lines: List[str], hits: List[int], context: int) -> None:
    """Append rg's ``--no-heading --line-number`` lines for one file's hits to ``out``."""
    pre = f"{label}:" if label else ""
    ctx_pre = f"{label}-" if label else ""
    if not context:
        out.extend(f"{pre}{i + 1}:{lines[i]}\n" for i in hits)
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
