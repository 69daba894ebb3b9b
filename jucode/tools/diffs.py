"""Unified diffs for edit-tool results (``--- a/<rel>`` / ``+++ b/<rel>``).

Pure Python (difflib) so an edit never pays for a ``git`` subprocess. Common leading and
trailing lines are trimmed before matching, which keeps a one-line change in a 10,000-line
file cheap; hunk headers are shifted back afterwards.
"""

from __future__ import annotations

import difflib
import re

CONTEXT = 3
NO_EOL = "\\ No newline at end of file\n"
_HEADER = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


def _lines(text: str) -> list:
    return text.splitlines(keepends=True) if text else []


def unified_diff(old: str, new: str, label: str, old_label: str = "", new_label: str = "") -> str:
    """A git-applicable unified diff of two texts; "" when they are equal."""
    if old == new:
        return ""
    a, b = _lines(old), _lines(new)
    # Trim the common prefix/suffix, keeping CONTEXT lines so hunks look the same.
    pre = 0
    limit = min(len(a), len(b))
    while pre < limit and a[pre] == b[pre]:
        pre += 1
    suf = 0
    while suf < limit - pre and a[len(a) - 1 - suf] == b[len(b) - 1 - suf]:
        suf += 1
    start = max(0, pre - CONTEXT)
    keep_suf = max(0, suf - CONTEXT)
    a_mid = a[start:len(a) - keep_suf]
    b_mid = b[start:len(b) - keep_suf]
    out = [f"--- {old_label or 'a/' + label}\n", f"+++ {new_label or 'b/' + label}\n"]
    body = difflib.unified_diff(a_mid, b_mid, n=CONTEXT, lineterm="\n")
    for i, line in enumerate(body):
        if i < 2:
            continue  # difflib's own ---/+++ lines
        if line.startswith("@@"):
            line = _shift(line, start)
        elif not line.endswith("\n"):
            line = line + "\n" + NO_EOL
        out.append(line)
    return "".join(out)


def _shift(header: str, offset: int) -> str:
    m = _HEADER.match(header)
    if not m or not offset:
        return header

    def fix(num: str, length: str) -> str:
        n = int(num)
        return f"{n + offset}{length or ''}"

    return (f"@@ -{fix(m.group(1), m.group(2))} +{fix(m.group(3), m.group(4))} @@"
            + header[m.end():])


def diff_stats(diff: str) -> dict:
    """Counts used by the model projection's diff_summary."""
    files, hunks, adds, dels = [], 0, 0, 0
    for line in diff.splitlines():
        if line.startswith("+++ "):
            name = line[4:]
            files.append(name[2:] if name.startswith("b/") else name)
        elif line.startswith("--- "):
            continue
        elif line.startswith("@@"):
            hunks += 1
        elif line.startswith("+"):
            adds += 1
        elif line.startswith("-"):
            dels += 1
    return {"files": files, "hunks": hunks, "additions": adds, "deletions": dels}
