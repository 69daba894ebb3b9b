"""The session store: an append-only JSONL journal, a summary sidecar and a lock.

Why a journal: a front-end may SIGKILL the engine at any moment, and `/resume <id>` must
still restore the conversation. Every entry is therefore written as one whole line and
flushed to the OS immediately (cheap), and :meth:`SessionStore.sync` fsyncs at turn
boundaries (expensive, so not per entry). A crash can at worst tear the last line; loading
skips it and reports a warning instead of failing.

Journal line types (upstream-compatible):

* ``{"type":"snapshot","session":{...state..., "entries":[...]}}`` — first write of a
  journal, and after entries were removed (branch delete); resets what came before.
* ``{"type":"entry","entry":{id, parent_id, created_at, kind}}`` — one appended entry.
* ``{"type":"state","state":{...}}`` — leaf / heads / resume / goal after a save or a
  state-only change (checkout). Entries after the last state line imply leaf = that entry.

This object is not thread-safe by design: the engine's main thread owns it; workers hand
their results to the main thread, which appends them.
"""

from __future__ import annotations

import os

import orjson

from . import paths
from .entry import (BRANCH, ROOT_LABEL, USER, Entry, SessionError, first_line, now_secs,
                    user_text)
from .lock import LOCK_WAIT_SECONDS, SessionLock
from .tree import TreeOps

STATE_VERSION = 1
SIDECAR_VERSION = 3
LABEL_CHARS = 72


class SessionWriteError(SessionError):
    """Persisting failed (disk full, permissions, ...). The in-memory session is intact and
    unwritten lines are retried on the next write; ``str(exc)`` is the ``error`` message."""

    def __init__(self, message: str, entry: Entry | None = None):
        super().__init__(message)
        self.entry = entry


class SessionStore(TreeOps):
    """One open session. Build with :meth:`create` or :meth:`open`; :meth:`close` when done."""

    def __init__(self, directory: str, session_id: str, cwd: str = ""):
        self.directory = directory
        self.id = session_id
        self.cwd = cwd
        self.created_at = now_secs()
        self.updated_at = self.created_at
        self.entries: dict[int, Entry] = {}
        self.leaf_id: int | None = None
        self.next_id = 1
        self.branch_heads: dict[str, int] = {}
        self.resume_summary: str | None = None
        self.resume_status: str | None = None
        self.resume_summary_updated_at: int | None = None
        self.goal: dict | None = None
        self.model: str | None = None          # model/effort the session last ran with (our
        self.reasoning_effort: str | None = None   # addition: resume continues with them)
        self.load_warnings: list[str] = []
        self._label_of: dict[int, str] = {}
        self._lock = SessionLock(paths.lock_path(directory, session_id), session_id)
        self._fd: int | None = None
        self._journal_started = False     # a snapshot line exists in the current journal
        self._pending: list[bytes] = []   # lines not yet written (after a write failure)
        self._needs_seal = False          # file may end mid-line
        self._dirty = False               # changed since the last sync
        self._write = os.write            # replaceable in tests (fake disk-full writer)

    # ---- construction ---------------------------------------------------------------

    @property
    def journal_path(self) -> str:
        return paths.journal_path(self.directory, self.id)

    @property
    def sidecar_path(self) -> str:
        return paths.sidecar_path(self.directory, self.id)

    @classmethod
    def create(cls, profile_dir, cwd, session_id: str | None = None,
               lock_wait: float = LOCK_WAIT_SECONDS) -> "SessionStore":
        """A new, empty session (nothing is written until the first append or sync)."""
        directory = paths.sessions_dir(profile_dir, cwd)
        store = cls(directory, session_id or paths.new_session_id(), os.fspath(cwd))
        try:
            store._lock.acquire(lock_wait)
        except OSError as e:
            raise SessionWriteError(f"failed to create session: {e}") from e
        return store

    @classmethod
    def open(cls, profile_dir, cwd, session_id: str,
             lock_wait: float = LOCK_WAIT_SECONDS) -> "SessionStore":
        """Lock and load an existing session. Problems found while loading (torn last line,
        unparseable lines) are in ``store.load_warnings`` for the engine to show as ``info``."""
        directory = paths.sessions_dir(profile_dir, cwd)
        session_id = session_id.strip()
        if not session_id or os.sep in session_id or session_id.startswith("."):
            raise SessionError(f"session not found: {session_id}")
        store = cls(directory, session_id, os.fspath(cwd))
        journal, sidecar = store.journal_path, store.sidecar_path
        if not os.path.exists(journal) and not os.path.exists(sidecar):
            raise SessionError(f"session not found: {session_id}")
        try:
            store._lock.acquire(lock_wait)
        except OSError as e:
            raise SessionError(f"failed to open session: {e}") from e
        try:
            if os.path.exists(journal):
                store._load_journal(journal)
            else:
                store._load_legacy(sidecar)
        except OSError as e:
            store._lock.release()
            raise SessionError(f"failed to open session: {e}") from e
        except BaseException:
            store._lock.release()
            raise
        return store

    # ---- loading ----------------------------------------------------------------------

    def _load_journal(self, path: str) -> None:
        with open(path, "rb") as f:
            data = f.read()
        ends_nl = data.endswith(b"\n")
        lines = data.split(b"\n")
        last = len(lines) - 1
        loads = orjson.loads
        entries = self.entries
        bad = 0
        torn = False
        implied_leaf = None
        for i, raw in enumerate(lines):
            if not raw or raw.isspace():
                continue
            try:
                obj = loads(raw)
                typ = obj.get("type")
            except (orjson.JSONDecodeError, AttributeError):
                if i == last and not ends_nl:
                    torn = True
                else:
                    bad += 1
                continue
            if typ == "entry":
                entry = Entry.from_json(obj.get("entry"))
                if entry is None:
                    bad += 1
                    continue
                entries[entry.id] = entry
                implied_leaf = entry.id
            elif typ == "state":
                self._apply_state(obj.get("state"))
                implied_leaf = None
            elif typ == "snapshot":
                entries.clear()
                self._apply_session(obj.get("session"))
                implied_leaf = None
            else:
                bad += 1
        if implied_leaf is not None:
            self.leaf_id = implied_leaf
        self._journal_started = bool(data.strip())
        self._needs_seal = bool(data) and not ends_nl
        if torn:
            self.load_warnings.append(
                f"session {self.id}: skipped a torn last journal line (interrupted write)")
        if bad:
            self.load_warnings.append(f"session {self.id}: skipped {bad} unreadable journal line(s)")
        self._finish_load()

    def _load_legacy(self, path: str) -> None:
        """A pre-journal ``<id>.json`` holding the whole session."""
        with open(path, "rb") as f:
            try:
                obj = orjson.loads(f.read())
            except orjson.JSONDecodeError as e:
                raise SessionError(f"failed to open session: {e}") from e
        if not isinstance(obj, dict) or "entries" not in obj:
            raise SessionError(f"session not found: {self.id}")
        self._apply_session(obj)
        self._journal_started = False      # first write starts a journal with a snapshot
        self._finish_load()

    def _apply_session(self, sess) -> None:
        if not isinstance(sess, dict):
            return
        for raw in sess.get("entries") or []:
            entry = Entry.from_json(raw)
            if entry is not None:
                self.entries[entry.id] = entry
        self._apply_state(sess)

    def _apply_state(self, st) -> None:
        if not isinstance(st, dict):
            return
        for key in ("created_at", "updated_at", "next_id"):
            val = st.get(key)
            if isinstance(val, int) and not isinstance(val, bool):
                setattr(self, key, val)
        if "leaf_id" in st:
            self.leaf_id = paths.parse_entry_id(st["leaf_id"]) if st["leaf_id"] is not None else None
        for key in ("resume_summary", "resume_status", "resume_summary_updated_at", "goal"):
            if key in st:
                setattr(self, key, st[key])
        for key in ("model", "reasoning_effort"):
            if isinstance(st.get(key), str) and st[key]:
                setattr(self, key, st[key])

    def _finish_load(self) -> None:
        """Order entries, derive labels and heads, repair leaf/next_id."""
        ids = list(self.entries)
        if any(a > b for a, b in zip(ids, ids[1:])):
            self.entries = {k: self.entries[k] for k in sorted(ids)}
        self._recompute_labels()
        if self.entries:
            top = next(reversed(self.entries))
            self.next_id = max(self.next_id, top + 1)
            if self.leaf_id is not None and self.leaf_id not in self.entries:
                self.leaf_id = top
        else:
            self.leaf_id = None

    def _recompute_labels(self) -> None:
        """Branch label of each entry (nearest Branch ancestor, else root) and the heads
        (latest entry per label): both follow from the entries alone, so they are derived
        instead of trusted from a possibly stale state line."""
        label_of: dict[int, str] = {}
        heads: dict[str, int] = {}
        for eid, entry in self.entries.items():
            kind = entry.kind
            if kind.get("type") == BRANCH:
                label = str(kind.get("label", ""))
            else:
                label = label_of.get(entry.parent_id, ROOT_LABEL)
            label_of[eid] = label
            heads[label] = eid
        self._label_of = label_of
        self.branch_heads = heads

    # ---- appending --------------------------------------------------------------------

    def append(self, kind: dict) -> Entry:
        """Add ``kind`` as a child of the current leaf, make it the leaf, write its line.

        On a write failure the entry is still part of the session (the turn can go on) and
        :class:`SessionWriteError` (carrying ``.entry``) is raised; the line is retried later."""
        if not isinstance(kind, dict) or not isinstance(kind.get("type"), str):
            raise ValueError("entry kind must be a dict with a string 'type'")
        entry = Entry(self.next_id, self.leaf_id, now_secs(), kind)
        self.next_id += 1
        self.entries[entry.id] = entry
        label = str(kind.get("label", "")) if kind["type"] == BRANCH else \
            self._label_of.get(entry.parent_id, ROOT_LABEL)
        self._label_of[entry.id] = label
        self.branch_heads[label] = entry.id
        self.leaf_id = entry.id
        self.updated_at = entry.created_at
        self._dirty = True
        try:
            if self._journal_started:
                self._write_lines([b'{"type":"entry","entry":' + orjson.dumps(entry.to_json()) + b"}\n"])
            else:
                self._start_journal()
        except SessionWriteError as e:
            e.entry = entry
            raise
        return entry

    def sync(self) -> None:
        """Durability point (turn boundaries): state line, fsync, sidecar."""
        if not self._journal_started:
            if self.entries or self._dirty:
                self._start_journal()
            return
        if not self._dirty and not self._pending:
            return
        self._write_lines([self._state_line()])
        try:
            os.fsync(self._fd)
        except OSError as e:
            raise SessionWriteError(f"failed to save session: {e}") from e
        self._write_sidecar()
        self._dirty = False

    def close(self) -> str | None:
        """Best-effort final sync, then release the lock. Returns a failure message, if any."""
        err = None
        if self._journal_started or self._pending:
            try:
                self.sync()
            except SessionWriteError as e:
                err = str(e)
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None
        self._lock.release()
        return err

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- state-only changes ------------------------------------------------------------

    def set_goal(self, goal: dict | None) -> None:
        self.goal = goal
        self._state_changed()

    def set_model(self, model: str | None, effort: str | None) -> None:
        """Remember the model the session runs with (a state line only when it changed)."""
        if (model, effort) == (self.model, self.reasoning_effort):
            return
        self.model, self.reasoning_effort = model, effort
        self._state_changed()

    def set_resume_summary(self, summary: str | None, status: str | None) -> None:
        self.resume_summary = summary
        self.resume_status = status
        self.resume_summary_updated_at = now_secs()
        self._state_changed()

    def _state_changed(self) -> None:
        """Record a leaf/goal/summary change without fsync (the next sync makes it durable)."""
        self.updated_at = now_secs()
        self._dirty = True
        if self._journal_started:
            self._write_lines([self._state_line()])
        elif self.entries:
            self._start_journal()

    def _rewrite_snapshot(self) -> None:
        """Entries were removed: a snapshot line supersedes everything before it."""
        self._recompute_labels()
        self.updated_at = now_secs()
        self._dirty = True
        self._write_lines([self._snapshot_line()])
        self._journal_started = True

    # ---- serialization ----------------------------------------------------------------

    def state_dict(self) -> dict:
        return {"version": STATE_VERSION, "id": self.id, "created_at": self.created_at,
                "updated_at": self.updated_at, "leaf_id": self.leaf_id, "next_id": self.next_id,
                "branch_heads": dict(self.branch_heads), "resume_summary": self.resume_summary,
                "resume_status": self.resume_status,
                "resume_summary_updated_at": self.resume_summary_updated_at, "goal": self.goal,
                "model": self.model, "reasoning_effort": self.reasoning_effort}

    def _state_line(self) -> bytes:
        return orjson.dumps({"type": "state", "state": self.state_dict()}) + b"\n"

    def _snapshot_line(self) -> bytes:
        sess = self.state_dict()
        sess["entries"] = [e.to_json() for e in self.entries.values()]
        return orjson.dumps({"type": "snapshot", "session": sess}) + b"\n"

    def _start_journal(self) -> None:
        self._write_lines([self._snapshot_line(), self._state_line()])
        self._journal_started = True
        try:
            os.fsync(self._fd)
        except OSError as e:
            raise SessionWriteError(f"failed to save session: {e}") from e
        self._write_sidecar()
        self._dirty = False

    def _write_lines(self, lines: list[bytes]) -> None:
        """Write pending + new lines with as few syscalls as possible; whole lines only."""
        pending = self._pending + lines
        data = b"".join(pending)
        if self._needs_seal:
            data = b"\n" + data
        try:
            if self._fd is None:
                os.makedirs(self.directory, exist_ok=True)
                self._fd = os.open(self.journal_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            view = memoryview(data)
            written = 0
            while written < len(view):
                n = self._write(self._fd, view[written:])
                if n <= 0:
                    raise OSError("short write")
                written += n
        except OSError as e:
            self._pending = pending
            self._needs_seal = True   # whatever got out may end mid-line
            raise SessionWriteError(f"failed to save session: {e}") from e
        self._pending = []
        self._needs_seal = False

    def sidecar_dict(self) -> dict:
        sc = self.state_dict()
        sc["version"] = SIDECAR_VERSION
        sc["entries_count"] = len(self.entries)
        sc["label"] = self.label()
        sc["journal"] = f"{self.id}.jsonl"
        return sc

    def _write_sidecar(self) -> None:
        path = self.sidecar_path
        tmp = path + ".tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                data = orjson.dumps(self.sidecar_dict())
                view = memoryview(data)
                while view:
                    n = self._write(fd, view)
                    view = view[n:]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, path)
        except OSError as e:
            raise SessionWriteError(f"failed to save session: {e}") from e

    # ---- queries ----------------------------------------------------------------------

    def label(self) -> str:
        """The session's name in pickers: its first user message (first line, ≤ 72 chars)."""
        for entry in self.entries.values():
            if entry.kind.get("type") == USER:
                return first_line(user_text(entry), LABEL_CHARS)
        return ""

    def request_items(self) -> list[dict]:
        """Canonical model input for the active path (see :mod:`.projection`)."""
        from .projection import request_items
        return request_items(self)

    def get(self, entry_id: int | None) -> Entry | None:
        return None if entry_id is None else self.entries.get(entry_id)

    def branch_of(self, entry_id: int | None) -> str:
        return self._label_of.get(entry_id, ROOT_LABEL)

    def active_path(self) -> list[Entry]:
        """Entries from the root to the current leaf, oldest first."""
        out = []
        entries = self.entries
        eid = self.leaf_id
        seen = set()
        while eid is not None and eid not in seen:
            entry = entries.get(eid)
            if entry is None:
                break
            seen.add(eid)
            out.append(entry)
            eid = entry.parent_id
        out.reverse()
        return out
