"""pdb inside a running engine: breakpoints in tools and workers without breaking the pipe.

Why this exists: stdin and stdout belong to the protocol. A plain ``breakpoint()`` in a tool
would print its prompt into the event stream and race the stdin reader thread for the
developer's commands. Here every debugger session talks on stderr, and while one is stopped
the reader hands it the lines from stdin instead of parsing them as ops. The engine's main
loop keeps running meanwhile, so events of other workers still arrive.

Two entry points, both set up by ``serve`` before the reader starts:

- ``breakpoint()`` anywhere (any thread) opens an :class:`EnginePdb`, unless the developer
  chose another debugger with ``PYTHONBREAKPOINT``.
- ``python -m pdb jucode.py serve``: the running pdb is adopted. Its output moves to stderr,
  its input to the console, and threads started later inherit its tracer, so ``b file:line``
  set at the first prompt also stops in worker threads (turns, tools, subagents).
"""

from __future__ import annotations

import os
import queue
import sys
import threading


class DebugConsole:
    """The debugger's stdin: lines the stdin reader forwards while a session is stopped."""

    def __init__(self) -> None:
        self._lines: queue.SimpleQueue = queue.SimpleQueue()
        self._stopped = 0
        self._lock = threading.Lock()

    @property
    def stopped(self) -> bool:
        return self._stopped > 0

    def session(self) -> "_Stopped":
        """``with console.session():`` marks a debugger as stopped for the duration of the block."""
        return _Stopped(self)

    def _count(self, delta: int) -> None:
        with self._lock:
            self._stopped += delta

    def offer(self, line: bytes) -> bool:
        """Reader hook: give ``line`` to a stopped debugger; False when none is stopped."""
        if not self.stopped:
            return False
        self._lines.put(line.decode("utf-8", "replace"))
        return True

    def end_of_input(self) -> None:
        """stdin closed: a waiting debugger reads EOF (and quits) instead of hanging."""
        self._lines.put("")

    def readline(self, _size: int = -1) -> str:
        return self._lines.get()


class _Stopped:
    def __init__(self, console: DebugConsole) -> None:
        self._console = console

    def __enter__(self) -> None:
        self._console._count(1)

    def __exit__(self, *exc) -> None:
        self._console._count(-1)


class EnginePdb:
    """Factory for the pdb class used by ``breakpoint()`` (built lazily: pdb imports cost)."""

    _cls = None

    @classmethod
    def make(cls, console: DebugConsole):
        if cls._cls is None:
            import pdb

            class _EnginePdb(pdb.Pdb):
                def __init__(self, console: DebugConsole):
                    # nosigint: SIGINT handling belongs to the engine, and workers can't set it.
                    super().__init__(stdin=console, stdout=sys.stderr, nosigint=True)
                    self._console = console

                def interaction(self, frame, traceback):
                    with self._console.session():
                        super().interaction(frame, traceback)

            cls._cls = _EnginePdb
        return cls._cls(console)


def running_pdb():
    """The pdb instance tracing this thread (``python -m pdb`` with breakpoints set), or None."""
    pdb = sys.modules.get("pdb")
    tracer = sys.gettrace()
    inst = getattr(tracer, "__self__", None)
    if pdb is not None and isinstance(inst, pdb.Pdb):
        return inst
    return None


def adopt(inst, console: DebugConsole) -> None:
    """Move a running pdb's I/O off the protocol streams and let worker threads hit its breakpoints."""
    inst.stdin = console
    inst.stdout = sys.stderr
    inst.use_rawinput = 0
    inst.nosigint = True
    plain = inst.interaction

    def interaction(frame, traceback):
        with console.session():
            plain(frame, traceback)

    inst.interaction = interaction          # bdb calls self.interaction: the instance attribute wins
    threading.settrace(inst.trace_dispatch)


def install(console: DebugConsole) -> None:
    """Route ``breakpoint()`` and an adopted ``python -m pdb`` through ``console``."""
    def hook(*args, **kwargs):
        if os.environ.get("PYTHONBREAKPOINT"):
            return sys.__breakpointhook__(*args, **kwargs)
        EnginePdb.make(console).set_trace(sys._getframe(1))

    sys.breakpointhook = hook
    inst = running_pdb()
    if inst is not None:
        adopt(inst, console)


def launched_by_pdb() -> bool:
    """``python -m pdb script``: pdb's own main() is on the stack below us."""
    if "pdb" not in sys.modules:
        return False
    frame = sys._getframe()
    while frame is not None:
        if frame.f_code.co_name == "main" and frame.f_globals.get("__name__") == "pdb":
            return True
        frame = frame.f_back
    return False
