"""``apply_patch``: unified diffs applied with ``git apply`` (check first, then apply).

``git apply`` matches hunks by context and refuses partial application, which is exactly the
all-or-nothing behaviour an agent edit needs; we only add the workspace check, a checkpoint
and a per-file diff of what really changed.
"""

from __future__ import annotations

import subprocess
from typing import List

from .base import ToolContext, ToolError
from .checkpoints import auto_checkpoint
from .common import rel_label, remember, resolve
from .diffs import unified_diff

GIT_TIMEOUT = 30


def _strip_label(raw: str) -> str:
    name = raw.split("\t", 1)[0].strip()
    if name.startswith('"') and name.endswith('"') and len(name) >= 2:
        name = name[1:-1]
    return name


def patch_targets(patch: str) -> List[str]:
    """File names a patch touches (``---``/``+++``/rename lines, ``/dev/null`` skipped), in order."""
    out: List[str] = []
    lines = patch.splitlines()
    for i, line in enumerate(lines):
        name = None
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            name = _strip_label(line[4:])
        elif line.startswith("+++ ") and i > 0 and lines[i - 1].startswith("--- "):
            name = _strip_label(line[4:])
        elif line.startswith("rename from ") or line.startswith("rename to "):
            name = line.split(" ", 2)[2].strip()
        elif line.startswith("copy to "):
            name = line[len("copy to "):].strip()
        if not name or name == "/dev/null":
            continue
        if name.startswith(("a/", "b/")) and not line.startswith(("rename", "copy")):
            name = name[2:]
        if name not in out:
            out.append(name)
    return out


def _git_apply(patch: str, cwd: str, check: bool) -> subprocess.CompletedProcess:
    cmd = ["git", "apply"] + (["--check"] if check else []) + ["--whitespace=nowarn", "-"]
    return subprocess.run(cmd, cwd=cwd, input=patch.encode("utf-8"), capture_output=True,
                          timeout=GIT_TIMEOUT, stdin=None)


def _read(path: str):
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None


def run_apply_patch(args: dict, ctx: ToolContext) -> dict:
    patch = args.get("patch")
    if not isinstance(patch, str):
        raise ToolError("missing patch")
    if not patch.strip():
        raise ToolError("patch must not be empty")
    if not patch.endswith("\n"):
        patch += "\n"
    targets = patch_targets(patch)
    real = [resolve(ctx, t, write=True) for t in targets]
    cwd = ctx.write_root or ctx.cwd
    try:
        check = _git_apply(patch, cwd, check=True)
    except subprocess.TimeoutExpired:
        raise ToolError("git apply --check timed out")
    except OSError as exc:
        raise ToolError(f"failed to run git apply: {exc}")
    if check.returncode != 0:
        return {"command": "git apply --check --whitespace=nowarn -", "exit_code": check.returncode,
                "stdout": check.stdout.decode("utf-8", "replace"),
                "stderr": check.stderr.decode("utf-8", "replace")}
    before = {p: _read(p) for p in real}
    auto_checkpoint(ctx, "auto-patch", real)
    try:
        proc = _git_apply(patch, cwd, check=False)
    except subprocess.TimeoutExpired:
        raise ToolError("git apply timed out")
    diffs = []
    for p in real:
        after = _read(p)
        if after is not None:
            remember(ctx, p, after)
        old = (before[p] or b"").decode("utf-8", "replace")
        new = (after or b"").decode("utf-8", "replace")
        diffs.append(unified_diff(old, new, rel_label(p, ctx.cwd)))
    return {"command": "git apply --whitespace=nowarn -", "exit_code": proc.returncode,
            "stdout": proc.stdout.decode("utf-8", "replace"),
            "stderr": proc.stderr.decode("utf-8", "replace"),
            "paths": targets, "diff": "".join(diffs)}
