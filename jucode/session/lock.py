"""The per-session ``<id>.lock`` file.

Two engines appending to one journal would interleave entries from different trees, so a
session is opened by one process at a time. The lock is a file created exclusively holding
``{"pid": N}``; a lock whose pid no longer runs is stale (the owner was SIGKILLed, which real
front-ends do) and is reclaimed. A live owner gets a short grace period (it may be closing).
"""

from __future__ import annotations

import json
import os
import time

from .entry import SessionError

LOCK_WAIT_SECONDS = 2.0
LOCK_STEP_SECONDS = 0.1


class SessionLockError(SessionError):
    """The session is open elsewhere. The message is upstream's exact text."""


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True          # exists, owned by someone else
    except OSError:
        return False
    return True


def _read_pid(path: str) -> int | None:
    try:
        with open(path, "rb") as f:
            data = json.loads(f.read() or b"null")
    except (OSError, ValueError):
        return None
    pid = data.get("pid") if isinstance(data, dict) else None
    return pid if isinstance(pid, int) and not isinstance(pid, bool) else None


class SessionLock:
    def __init__(self, path: str, session_id: str):
        self.path = path
        self.session_id = session_id
        self.held = False

    def _try_create(self) -> bool:
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        try:
            os.write(fd, json.dumps({"pid": os.getpid()}).encode())
        finally:
            os.close(fd)
        self.held = True
        return True

    def acquire(self, wait: float = LOCK_WAIT_SECONDS) -> None:
        """Take the lock or raise :class:`SessionLockError` after ``wait`` seconds.

        OSErrors other than "exists" (read-only dir, ...) propagate to the caller."""
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        deadline = time.monotonic() + wait
        pid = None
        while True:
            if self._try_create():
                return
            pid = _read_pid(self.path)
            if pid is not None and not pid_alive(pid):
                try:
                    os.unlink(self.path)
                except FileNotFoundError:
                    pass
                continue
            if time.monotonic() >= deadline:
                break
            time.sleep(min(LOCK_STEP_SECONDS, max(0.0, deadline - time.monotonic())))
        by = f" by pid {pid}" if pid is not None else ""
        raise SessionLockError(f"session {self.session_id} is already open{by}; "
                               f"close it first or delete {self.path} if stale")

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        try:
            if _read_pid(self.path) in (os.getpid(), None):
                os.unlink(self.path)
        except OSError:
            pass
