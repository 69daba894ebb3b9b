"""Deferred actions: gated tool calls recorded while nobody watches the session.

When a session is unattended (``set_attended false``), a call that would wait on an
``approval_request`` is stored here instead and the model is told it was submitted for
confirmation, so the turn can go on. A client decides it later (``decide_action``), possibly
after an engine restart, so the store lives on disk in the profile directory. An identical call
(same tool, arguments and cwd → same digest) reuses the open action or the decision already
made for it, so a model that repeats itself does not pile up duplicates.

Pure bookkeeping: running an allowed call and emitting events is the engine's job.
"""

from __future__ import annotations

import hashlib
import json
import logging
import contextlib
import os
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, fields
from typing import Optional

try:                          # POSIX: serialize read-modify-write across engine processes
    import fcntl
except ImportError:           # pragma: no cover - Windows
    fcntl = None

log = logging.getLogger(__name__)

STORE_FILE = "deferred_actions.json"
MAX_DECIDED = 500          # decided actions kept for reuse; open ones are never dropped

DECISIONS = ("allow", "deny")


class ActionError(ValueError):
    """A ``decide_action`` that cannot be applied; ``str(e)`` is the ``error`` event message."""


def action_digest(name: str, arguments: str, cwd: str) -> str:
    """Hex of the first 12 bytes of SHA-256(name NUL arguments NUL cwd NUL)."""
    data = f"{name}\0{arguments}\0{cwd}\0".encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).digest()[:12].hex()


def action_id(created_ms: int, digest: str) -> str:
    return f"act-{created_ms}-{digest[:8]}"


@dataclass
class DeferredAction:
    id: str
    session_id: str
    cwd: str
    call_id: str
    name: str
    arguments: str                 # the raw JSON argument string, as the model sent it
    summary: str
    digest: str
    created_at: int                # epoch ms
    subagent_id: Optional[str] = None
    decision: Optional[str] = None     # None while open, then "allow" | "deny"
    decided_at: Optional[int] = None
    output: Optional[str] = None       # model output of the executed call (allow)
    is_error: bool = False

    @property
    def is_open(self) -> bool:
        return self.decision is None

    def event_fields(self) -> dict:
        """Fields of the ``action_deferred`` event."""
        return {"id": self.id, "session_id": self.session_id, "cwd": self.cwd,
                "call_id": self.call_id, "name": self.name, "arguments": self.arguments,
                "summary": self.summary, "subagent_id": self.subagent_id,
                "digest": self.digest, "created_at": self.created_at}

    def decided_fields(self) -> dict:
        """Fields of the ``action_decided`` event (output null when declined)."""
        return {"id": self.id, "decision": self.decision,
                "output": self.output if self.decision == "allow" else None,
                "is_error": bool(self.is_error) if self.decision == "allow" else False}

    @classmethod
    def from_dict(cls, data: dict) -> "DeferredAction":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


# --------------------------------------------------------------------------- texts

def submitted_result(action: DeferredAction) -> dict:
    """The (non-error) tool result the model receives for a deferred call."""
    return {"status": "submitted for confirmation", "action_id": action.id,
            "note": ("No one is watching this session, so this call was recorded for the user to "
                     "confirm later instead of running now. Carry on with work that does not depend "
                     "on it; you will get a message with the outcome once it is decided. Do not "
                     "submit the same call again.")}


def reused_result(action: DeferredAction) -> dict:
    """Result for a repeated call whose earlier identical action was already decided."""
    if action.decision == "deny":
        return {"error": (f"this exact call was already declined by the user (deferred action "
                          f"{action.id}). Do not retry it; try a different approach.")}
    return {"status": "already approved and executed", "action_id": action.id,
            "output": action.output, "note": "This identical call already ran; see output."}


def declined_message(action: DeferredAction) -> str:
    """User message queued after ``decide_action deny``."""
    summary = f" ({action.summary})" if action.summary else ""
    return (f"[deferred action {action.id} declined]\n"
            f"The user declined `{action.name}`{summary}. Do not retry it; continue without it "
            "or choose another way to reach the goal.")


def approved_message(action: DeferredAction, output: str, is_error: bool) -> str:
    """User message queued after an allowed deferred call has run."""
    head = f"[deferred action {action.id} approved and executed{', failed' if is_error else ''}]"
    return f"{head}\n{action.name} {action.arguments}\nresult:\n{output}"


# --------------------------------------------------------------------------- store

class ActionStore:
    """Deferred actions of every session of one profile, persisted as one JSON file.

    Every operation re-reads the file under a lock and rewrites it atomically (temp file +
    ``os.replace``), so several engines sharing a profile dir see each other's actions and a
    crash never leaves a half-written store.
    """

    def __init__(self, profile_dir: str):
        self.profile_dir = profile_dir
        self.path = os.path.join(profile_dir, STORE_FILE)
        self._lock = threading.Lock()

    # -- file access

    @contextlib.contextmanager
    def _locked(self):
        """Thread lock plus, where available, an advisory lock shared with other engines."""
        with self._lock:
            handle = None
            if fcntl is not None:
                try:
                    os.makedirs(self.profile_dir, exist_ok=True)
                    handle = open(self.path + ".lock", "a")
                    fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
                except OSError:
                    handle = None
            try:
                yield
            finally:
                if handle is not None:
                    handle.close()      # closing releases the flock

    def _load(self) -> dict:
        try:
            with open(self.path, "r", encoding="utf-8") as fh:
                raw = json.load(fh)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("deferred action store %s unreadable: %s", self.path, exc)
            return {}
        items = raw.get("actions", []) if isinstance(raw, dict) else []
        out = {}
        for item in items:
            try:
                act = DeferredAction.from_dict(item)
            except TypeError:
                continue
            out[act.id] = act
        return out

    def _save(self, actions: dict) -> None:
        decided = sorted((a for a in actions.values() if not a.is_open),
                         key=lambda a: a.decided_at or a.created_at)
        for old in decided[:max(0, len(decided) - MAX_DECIDED)]:
            actions.pop(old.id, None)
        os.makedirs(self.profile_dir, exist_ok=True)
        payload = {"version": 1, "actions": [asdict(a) for a in actions.values()]}
        fd, tmp = tempfile.mkstemp(prefix=".actions-", suffix=".tmp", dir=self.profile_dir)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(payload, fh, ensure_ascii=False, indent=1)
                fh.write("\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    # -- queries

    def exists(self) -> bool:
        """Cheap check used at startup: no file means no actions (nothing to read)."""
        return os.path.exists(self.path)

    def get(self, action_id_: str) -> Optional[DeferredAction]:
        with self._locked():
            return self._load().get(action_id_)

    def list(self, session_id: Optional[str] = None, open_only: bool = False) -> list:
        """Actions oldest first, optionally of one session and/or still open."""
        with self._locked():
            acts = list(self._load().values())
        acts = [a for a in acts if (session_id is None or a.session_id == session_id)
                and (not open_only or a.is_open)]
        return sorted(acts, key=lambda a: (a.created_at, a.id))

    # -- changes

    def defer(self, session_id: str, cwd: str, call_id: str, name: str, arguments: str,
              summary: str = "", subagent_id: Optional[str] = None,
              now_ms: Optional[int] = None) -> tuple:
        """Record a gated call. Returns ``(action, reused)``.

        ``reused`` is True when an identical call (same digest) already has an open action or
        a decision: then nothing new is stored (and no ``action_deferred`` should be emitted);
        an open one gets :func:`submitted_result`, a decided one :func:`reused_result`.
        """
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
        digest = action_digest(name, arguments, cwd)
        with self._locked():
            actions = self._load()
            same = [a for a in actions.values() if a.digest == digest]
            if same:
                # Prefer an open action, else the most recent decision.
                same.sort(key=lambda a: (a.is_open, a.decided_at or 0, a.created_at))
                return same[-1], True
            created = int(now_ms if now_ms is not None else time.time() * 1000)
            act = DeferredAction(id=action_id(created, digest), session_id=session_id, cwd=cwd,
                                 call_id=call_id, name=name, arguments=arguments,
                                 summary=summary or "", digest=digest, created_at=created,
                                 subagent_id=subagent_id)
            actions[act.id] = act
            self._save(actions)
            return act, False

    def decide(self, action_id_: str, decision: str, session_id: Optional[str] = None) -> DeferredAction:
        """Mark an open action allowed or denied. For allow the caller then runs the call and
        reports with :meth:`record_output`. ``session_id`` (when given) must own the action."""
        if decision not in DECISIONS:
            raise ActionError("decide_action requires action and decision: allow or deny")
        with self._locked():
            actions = self._load()
            act = actions.get(action_id_)
            if act is None:
                raise ActionError(f"no deferred action {action_id_}")
            if session_id is not None and act.session_id != session_id:
                raise ActionError(f"deferred action {action_id_} belongs to session {act.session_id}")
            if not act.is_open:
                raise ActionError(f"deferred action {action_id_} was already decided ({act.decision})")
            act.decision = decision
            act.decided_at = int(time.time() * 1000)
            self._save(actions)
            return act

    def record_output(self, action_id_: str, output: str, is_error: bool) -> Optional[DeferredAction]:
        """Store the model output of an allowed action after it ran (for reuse and display)."""
        with self._locked():
            actions = self._load()
            act = actions.get(action_id_)
            if act is None:
                return None
            act.output = output
            act.is_error = bool(is_error)
            self._save(actions)
            return act
