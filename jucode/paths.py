"""Walking up the directory tree: one helper for every "nearest ancestor" rule (trust decisions,
repository roots, instruction discovery, ignore files)."""

from __future__ import annotations

import os


def ancestors(path: str) -> list[str]:
    """``path`` (made absolute) and each of its parents up to the filesystem root, nearest first."""
    cur = os.path.abspath(path)
    chain = [cur]
    while True:
        parent = os.path.dirname(cur)
        if parent == cur:
            return chain
        chain.append(parent)
        cur = parent
