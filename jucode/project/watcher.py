"""Watch the files that shape a session and report, debounced, which kind of thing changed.

Watched: the profile's ``commands/``, ``skills/``, ``hooks.json``, ``config.json``, ``trust.json``,
``prompt.txt``; ``~/.agents/skills``; the project's ``.jucode/`` (hooks.json, commands, skills),
``.agents/skills`` and the AGENTS.md/CLAUDE.md files of the instruction directories.

The watcher uses watchdog's native observer (inotify on Linux), so it costs nothing while idle,
and it starts on its own thread after startup so importing watchdog never delays ``hello``.
Folders that do not exist yet are covered by watching their nearest existing parent until they
appear. Bursts of events (an editor's save is several) collapse into one ``on_change(kind)`` per
kind after a quiet period. ``on_change`` runs on the watcher's thread: the engine should only
enqueue a reload there, never touch session state directly.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Callable, Optional

from .instructions import INSTRUCTION_FILES, instruction_dirs
from .skills import STATE_FILE as SKILLS_STATE_FILE

log = logging.getLogger(__name__)

KIND_COMMANDS = "commands"
KIND_SKILLS = "skills"
KIND_HOOKS = "hooks"
KIND_CONFIG = "config"
KIND_TRUST = "trust"
KIND_PROMPT = "prompt"
KIND_INSTRUCTIONS = "instructions"

_RELEVANT_EVENTS = {"created", "modified", "deleted", "moved", "closed"}
_MAX_DELAY = 1.0   # report at the latest this long after the first event of a burst


def _canon(path: str) -> str:
    return os.path.realpath(os.path.abspath(path))


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class ProjectWatcher:
    """Debounced watcher. ``start()`` returns at once; ``stop()`` joins every thread."""

    def __init__(self, profile_dir: str, cwd: str, on_change: Callable[[str], None],
                 debounce: float = 0.15, home: Optional[str] = None, project: bool = True,
                 on_ready: Optional[Callable[[], None]] = None):
        self.on_ready = on_ready                           # called on the setup thread once watching
        self.profile_dir = _canon(profile_dir)
        self.cwd = _canon(cwd)
        self.home = _canon(home if home is not None else os.path.expanduser("~"))
        self.on_change = on_change
        self.debounce = debounce
        self.project = project
        self._cond = threading.Condition()
        self._pending: set[str] = set()
        self._first_at = 0.0
        self._last_at = 0.0
        self._stopped = False
        self._observer = None
        self._handler = None
        self._scheduled: set[tuple[str, bool]] = set()
        self._waiting: list[tuple[str, bool, str]] = []   # targets not yet existing: (path, recursive, anchor)
        self._sched_lock = threading.Lock()
        self._setup_thread: Optional[threading.Thread] = None
        self._dispatch_thread: Optional[threading.Thread] = None
        self.ready = threading.Event()                     # set once every watch is in place
        self._build_targets()

    # ------------------------------------------------------------------ targets / classify

    def _build_targets(self) -> None:
        p = self.profile_dir
        self.commands_roots = [os.path.join(p, "commands")]
        self.skills_roots = [os.path.join(p, "skills"), os.path.join(self.home, ".agents", "skills")]
        self.hooks_files = [os.path.join(p, "hooks.json")]
        self.instruction_dirs: list[str] = []
        # (path, recursive, anchor): anchor bounds the parent walk for missing folders.
        self.targets: list[tuple[str, bool, str]] = [
            (p, False, p),
            (self.commands_roots[0], False, p),
            (self.skills_roots[0], True, p),
            (self.skills_roots[1], True, self.home),
        ]
        if self.project:
            dot = os.path.join(self.cwd, ".jucode")
            self.commands_roots.append(os.path.join(dot, "commands"))
            self.skills_roots += [os.path.join(dot, "skills"), os.path.join(self.cwd, ".agents", "skills")]
            self.hooks_files.append(os.path.join(dot, "hooks.json"))
            self.instruction_dirs = [_canon(d) for d in instruction_dirs(self.cwd)]
            self.targets += [
                (dot, False, self.cwd),
                (self.commands_roots[1], False, self.cwd),
                (self.skills_roots[2], True, self.cwd),
                (self.skills_roots[3], True, self.cwd),
            ]
            self.targets += [(d, False, d) for d in self.instruction_dirs]

    def classify(self, path: str) -> Optional[str]:
        """Which kind of resource ``path`` belongs to, or None when it is not watched for."""
        path = os.path.abspath(path)
        if path in self.hooks_files:
            return KIND_HOOKS
        parent, base = os.path.split(path)
        if parent == self.profile_dir:
            named = {"config.json": KIND_CONFIG, "trust.json": KIND_TRUST, "prompt.txt": KIND_PROMPT,
                     SKILLS_STATE_FILE: KIND_SKILLS}
            if base in named:
                return named[base]
        for root in self.commands_roots:
            if path == root or (parent == root and base.endswith(".md")):
                return KIND_COMMANDS
        for root in self.skills_roots:
            if _within(path, root):
                return KIND_SKILLS
        if base in INSTRUCTION_FILES and parent in self.instruction_dirs:
            return KIND_INSTRUCTIONS
        return None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Begin watching on background threads (watchdog is imported there, not here)."""
        if self._setup_thread is not None or self._stopped_flag():
            return
        self._dispatch_thread = threading.Thread(target=self._dispatch_loop, name="jucode-watch-debounce",
                                                 daemon=True)
        self._dispatch_thread.start()
        self._setup_thread = threading.Thread(target=self._setup, name="jucode-watch-setup", daemon=True)
        self._setup_thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop observing and join the threads; safe to call more than once or before start.

        A stopped watcher stays stopped (build a new one to watch again, e.g. after /new moved cwd).
        """
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._setup_thread is not None:
            self._setup_thread.join(timeout)
        with self._sched_lock:
            observer, self._observer = self._observer, None
        if observer is not None:
            try:
                observer.stop()
                observer.join(timeout)
            except Exception:  # noqa: BLE001 - shutting down; nothing useful to do
                log.debug("watcher observer stop failed", exc_info=True)
        if self._dispatch_thread is not None:
            self._dispatch_thread.join(timeout)

    def _setup(self) -> None:
        try:
            from watchdog.events import FileSystemEventHandler
            from watchdog.observers import Observer
        except Exception as exc:  # noqa: BLE001 - watching is optional; the engine still works
            log.warning("file watcher unavailable: %s", exc)
            return
        watcher = self

        class _Handler(FileSystemEventHandler):
            def on_any_event(self, ev) -> None:  # noqa: D401 - watchdog callback
                watcher._on_fs_event(ev)

        with self._sched_lock:
            if self._stopped_flag():
                return
            self._handler = _Handler()
            observer = Observer()
            self._observer = observer
            for target in self.targets:
                self._schedule_target(*target)
            try:
                observer.start()
            except Exception as exc:  # noqa: BLE001 - e.g. inotify limits reached
                log.warning("file watcher failed to start: %s", exc)
                self._observer = None
                return
        self.ready.set()
        if self.on_ready is not None:
            try:
                self.on_ready()    # changes made before the watches existed were not seen
            except Exception:  # noqa: BLE001
                log.exception("watcher on_ready callback failed")

    def _stopped_flag(self) -> bool:
        with self._cond:
            return self._stopped

    # ------------------------------------------------------------------ scheduling

    def _schedule(self, path: str, recursive: bool) -> bool:
        key = (path, recursive)
        if key in self._scheduled:
            return True
        try:
            self._observer.schedule(self._handler, path, recursive=recursive)
        except Exception as exc:  # noqa: BLE001 - vanished dir, permissions, inotify limits
            log.debug("cannot watch %s: %s", path, exc)
            return False
        self._scheduled.add(key)
        return True

    def _attach(self, path: str, recursive: bool, anchor: str) -> bool:
        """Watch ``path`` if it exists (True), else its deepest existing ancestor within anchor.

        After placing an ancestor watch the walk is repeated: a folder created between our
        check and the watch (``mkdir -p`` racing us) produced no event we could see, so it is
        picked up here instead.
        """
        for _ in range(32):
            if os.path.isdir(path) and self._schedule(path, recursive):
                return True
            cur = os.path.dirname(path)
            while _within(cur, anchor) and not os.path.isdir(cur):
                cur = os.path.dirname(cur)
            if not _within(cur, anchor) or not self._schedule(cur, False):
                return False
            if cur == os.path.dirname(path) and not os.path.isdir(path):
                return False
            # Re-check: the level below cur may have appeared meanwhile.
            nxt = path
            while os.path.dirname(nxt) != cur:
                nxt = os.path.dirname(nxt)
            if not os.path.isdir(nxt):
                return False
        return False

    def _schedule_target(self, path: str, recursive: bool, anchor: str) -> None:
        if not self._attach(path, recursive, anchor):
            self._waiting.append((path, recursive, anchor))

    def _refresh_waiting(self) -> list[str]:
        """Attach watches to folders that appeared; returns kinds to report for them."""
        kinds = []
        with self._sched_lock:
            if self._observer is None:
                return kinds
            still = []
            for path, recursive, anchor in self._waiting:
                if self._attach(path, recursive, anchor):
                    kind = self.classify(path) or self.classify(os.path.join(path, "x.md"))
                    if kind:
                        kinds.append(kind)
                else:
                    still.append((path, recursive, anchor))
            self._waiting = still
        return kinds

    # ------------------------------------------------------------------ events

    def _on_fs_event(self, ev) -> None:
        if ev.event_type not in _RELEVANT_EVENTS:
            return
        paths = [ev.src_path]
        dest = getattr(ev, "dest_path", "")
        if dest:
            paths.append(dest)
        kinds = set()
        for p in paths:
            p = os.fsdecode(p)
            kind = self.classify(p)
            if kind:
                kinds.add(kind)
        if ev.is_directory and ev.event_type in ("created", "moved") and self._waiting:
            kinds.update(self._refresh_waiting())
        if kinds:
            self._note(kinds)

    def _note(self, kinds: set[str]) -> None:
        with self._cond:
            now = time.monotonic()
            if not self._pending:
                self._first_at = now
            self._pending.update(kinds)
            self._last_at = now
            self._cond.notify_all()

    def _dispatch_loop(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._stopped:
                        return
                    if not self._pending:
                        self._cond.wait()      # idle: block without a timeout
                        continue
                    now = time.monotonic()
                    due = min(self._last_at + self.debounce, self._first_at + _MAX_DELAY)
                    if now < due:
                        self._cond.wait(due - now)
                        continue
                    kinds = sorted(self._pending)
                    self._pending.clear()
                    break
            for kind in kinds:
                try:
                    self.on_change(kind)
                except Exception:  # noqa: BLE001 - a bad callback must not kill the watcher
                    log.exception("watcher callback failed for %s", kind)
