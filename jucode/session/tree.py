"""Tree operations on a session: fork, checkout, delete, rewind, and the tree/checkpoint views.

The conversation is a tree because editing an earlier message must not destroy what came
after it: ``checkout`` only moves the leaf, and the next append starts a sibling. Labels
(``/fork``) are bookmarks implemented as ``branch`` entries. Error texts are upstream's,
since front-ends show them verbatim.

Mixed into :class:`jucode.session.journal.SessionStore`; relies on its ``entries``,
``leaf_id``, ``branch_heads``, ``append``, ``active_path``, ``_state_changed`` and
``_rewrite_snapshot``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .entry import BRANCH, ROOT_LABEL, USER, Entry, SessionError, first_line, user_text
from .paths import fmt_entry_id, parse_entry_id

TREE_LABEL_CHARS = 72
REWIND_LABEL_CHARS = 60


@dataclass
class TreeResult:
    """Outcome of a tree command. ``status`` is the ``status`` event text; ``fill_input`` (if
    not None) goes out as a ``fill_input`` event; ``restore_since`` (rewind) is the turn's
    ``created_at`` for restoring file checkpoints."""

    status: str
    fill_input: str | None = None
    entry: Entry | None = None
    restore_since: int | None = None


def ago(seconds: float) -> str:
    """``Ns ago`` / ``Nm ago`` / ``Nh ago`` / ``Nd ago``."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s ago"
    if s < 3600:
        return f"{s // 60}m ago"
    if s < 86400:
        return f"{s // 3600}h ago"
    return f"{s // 86400}d ago"


def _is_entry_target(target: str) -> bool:
    t = target.strip()
    return t.startswith("e") and parse_entry_id(t) is not None or t.isdigit()


class TreeOps:
    # ---- commands -----------------------------------------------------------------------

    def fork(self, label: str) -> TreeResult:
        """Append a ``branch`` entry named ``label`` at the current leaf."""
        label = (label or "").strip()
        if not label:
            raise SessionError("branch label is required")
        if "\n" in label or "\r" in label:
            raise SessionError("branch label must be a single line")
        if label == ROOT_LABEL:
            raise SessionError("root is reserved")
        if label in self.branch_heads:
            raise SessionError(f"branch already exists: {label}")
        entry = self.append({"type": BRANCH, "label": label})
        return TreeResult(status=f"forked {label}: {fmt_entry_id(entry.id)}", entry=entry)

    def checkout(self, target: str) -> TreeResult:
        """``e<N>`` (a user entry): leaf = its parent and its text comes back for editing;
        otherwise a branch label: leaf = that branch's head."""
        target = (target or "").strip()
        if not target:
            raise SessionError("branch label is required")
        if _is_entry_target(target):
            eid = parse_entry_id(target)
            entry = self.entries.get(eid)
            if entry is None:
                raise SessionError(f"entry e{eid} not found")
            if entry.kind.get("type") != USER:
                raise SessionError(f"entry e{eid} is not a user node")
            self.leaf_id = entry.parent_id
            self._state_changed()
            return TreeResult(status=f"checked out e{eid}", fill_input=user_text(entry), entry=entry)
        if target not in self.branch_heads:
            if target == ROOT_LABEL:      # root with no entries yet: the empty conversation
                self.leaf_id = None
                self._state_changed()
                return TreeResult(status=f"checked out {target}")
            raise SessionError(f"branch not found: {target}")
        self.leaf_id = self.branch_heads[target]
        self._state_changed()
        return TreeResult(status=f"checked out {target}", entry=self.entries.get(self.leaf_id))

    def delete(self, label: str) -> TreeResult:
        """Remove the branch entry named ``label`` and everything below it."""
        label = (label or "").strip()
        if label == ROOT_LABEL:
            raise SessionError("cannot delete root branch")
        branch = next((e for e in self.entries.values()
                       if e.kind.get("type") == BRANCH and e.kind.get("label") == label), None)
        if branch is None:
            raise SessionError(f"branch not found: {label}")
        doomed = {branch.id}
        for eid, entry in self.entries.items():      # id order: parents before children
            if entry.parent_id in doomed:
                doomed.add(eid)
        self.entries = {k: v for k, v in self.entries.items() if k not in doomed}
        if self.leaf_id in doomed:
            self.leaf_id = branch.parent_id
        self._rewrite_snapshot()
        return TreeResult(status=f"deleted branch {label}")

    def rewind(self, target: str) -> TreeResult:
        """Move the leaf to just before a user turn of the active path (``/rewind <id>``).
        The caller restores files changed since ``restore_since``."""
        eid = parse_entry_id(target) if target is not None else None
        path_users = {e.id: e for e in self.active_path() if e.kind.get("type") == USER}
        entry = path_users.get(eid)
        if entry is None:
            raise SessionError("that is not a rewindable turn")
        self.leaf_id = entry.parent_id
        self._state_changed()
        return TreeResult(status=f"checked out e{eid}", fill_input=user_text(entry), entry=entry,
                          restore_since=entry.created_at)

    # ---- views --------------------------------------------------------------------------

    def tree_view(self) -> list[dict]:
        """``tree_view.nodes``: user entries only, parented to their nearest user ancestor;
        ``active`` marks the nodes on the current path."""
        on_path = {e.id for e in self.active_path()}
        user_anchor: dict[int, int | None] = {}
        nodes = []
        for eid, entry in self.entries.items():
            parent_anchor = user_anchor.get(entry.parent_id)
            if entry.kind.get("type") == USER:
                user_anchor[eid] = eid
                nodes.append({"id": f"e{eid}", "parent_id": fmt_entry_id(parent_anchor),
                              "label": first_line(user_text(entry), TREE_LABEL_CHARS) or "(empty)",
                              "active": eid in on_path})
            else:
                user_anchor[eid] = parent_anchor
        return nodes

    def rewind_targets(self, now: float | None = None) -> list[dict]:
        """``checkpoint_view.items`` for ``/rewind``: the user turns on the active path."""
        now = time.time() if now is None else now
        return [{"id": f"e{e.id}",
                 "label": first_line(user_text(e), REWIND_LABEL_CHARS) or "(empty)",
                 "detail": ago(now - e.created_at)}
                for e in self.active_path() if e.kind.get("type") == USER]

    def transcript(self) -> list[dict]:
        from .transcript import transcript_items
        return transcript_items(self.active_path())
