"""``jucode serve``: framing, the stdin reader thread, the 30 ms main loop and the only writer.

Data flows one way: the reader thread turns stdin lines into inbox items; workers put events
into the same inbox; the main thread takes items one at a time, parses and dispatches lines,
and writes events. Only :class:`EventWriter` touches stdout.
"""

from __future__ import annotations

import logging
import os
import queue
import sys
import threading
import time

import orjson

from . import PROTOCOL_VERSION, __version__

MAX_LINE_BYTES = 16 * 1024 * 1024   # a longer line is answered with an error and skipped
TICK_SECONDS = 0.03


class LineWriter:
    """One JSON object per line on a byte stream, flushed, from any thread. Also the writer of
    the ACP peer: both protocols share framing and the UTF-8-safe encoding."""

    def __init__(self, stream):
        self._out = stream
        self._lock = threading.Lock()
        self.broken = False

    def write_obj(self, obj: dict) -> None:
        try:
            data = orjson.dumps(obj)
        except TypeError:
            # Lone surrogates or odd objects: fall back to a replacement-safe encoding.
            import json
            data = json.dumps(obj, ensure_ascii=False, default=str).encode("utf-8", "replace")
        with self._lock:
            if self.broken:
                return
            try:
                self._out.write(data + b"\n")
                self._out.flush()
            except (BrokenPipeError, OSError, ValueError):
                self.broken = True


class EventWriter:
    """Serializes events, adds ``session``, writes one line and flushes. Main thread only.

    With ``JUCODE_STRICT_EVENTS=1`` (the test harness sets it) every event is checked against
    ``events.EVENT_FIELDS``, the one list of event types and fields; a violation is logged and
    reported as an ``error`` event starting with "protocol bug:" so tests catch it.
    """

    def __init__(self, stream, session_getter=None):
        self._lines = LineWriter(stream)
        self._session = session_getter
        self._strict = os.environ.get("JUCODE_STRICT_EVENTS") == "1"

    def _check(self, ev: dict) -> None:
        from .events import EVENT_FIELDS
        allowed = EVENT_FIELDS.get(ev.get("type"))
        bad = None
        if allowed is None:
            bad = f"unknown event type {ev.get('type')!r}"
        else:
            extra = [k for k in ev if k not in allowed and k not in ("type", "session")]
            if extra:
                bad = f"event {ev['type']!r} has undeclared fields {extra}"
        if bad:
            logging.getLogger("jucode.serve").error("protocol bug: %s", bad)
            self._strict = False            # report once, without recursing
            self.write({"type": "error", "message": f"protocol bug: {bad}"})
            self._strict = True

    def write(self, ev: dict, with_session: bool = True) -> None:
        if self._strict:
            self._check(ev)
        if with_session and self._session is not None:
            ev = dict(ev)
            ev["session"] = self._session()
        self._lines.write_obj(ev)

    @property
    def broken(self) -> bool:
        return self._lines.broken


class StdinReader(threading.Thread):
    """Reads raw lines and posts ``("line", bytes)`` / ``("eof", None)``; never parses.

    While a debugger is stopped at a breakpoint, lines go to it instead (``console``)."""

    def __init__(self, stream, inbox: queue.SimpleQueue, console=None):
        super().__init__(name="jucode-stdin", daemon=True)
        self._in = stream
        self._inbox = inbox
        self._console = console

    def run(self) -> None:
        try:
            while True:
                line = self._in.readline(MAX_LINE_BYTES + 1)
                if not line:
                    break
                if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                    # Swallow the rest of an oversized line without holding it in memory.
                    while True:
                        rest = self._in.readline(1 << 20)
                        if not rest or rest.endswith(b"\n"):
                            break
                    self._inbox.put(("toolong", len(line)))
                    continue
                if self._console is not None and self._console.offer(line):
                    continue
                self._inbox.put(("line", line))
        except (OSError, ValueError):
            pass
        if self._console is not None:
            self._console.end_of_input()
        self._inbox.put(("eof", None))


def serve_main(argv: list[str]) -> int:
    """Entry point of ``jucode serve [--chat] [--approval-mode M] [--demo] [--replay FILE]``."""
    out = sys.stdout.buffer
    # Keep anything else from reaching the protocol stream: stray prints go to stderr.
    sys.stdout = sys.stderr
    if "pdb" in sys.modules:
        from .debugger import launched_by_pdb
        if launched_by_pdb():   # end the "(Pdb) " prompt pdb left open, so hello gets a line of its own
            out.write(b"\n")
    hello_writer = EventWriter(out)
    hello_writer.write({"type": "hello", "protocol": PROTOCOL_VERSION, "version": __version__},
                       with_session=False)

    from .heap import single_arena
    single_arena()                              # before any thread exists (see jucode/heap.py)
    from .debugger import DebugConsole, install
    console = DebugConsole()
    install(console)                            # breakpoint()/pdb use stderr, not the pipe; workers
                                                # started from here on inherit an adopted pdb's tracer
    from .engine import Engine, EngineOptions   # after hello: the engine's imports cost time

    opts = EngineOptions.from_argv(argv)
    inbox: queue.SimpleQueue = queue.SimpleQueue()   # C-level get(timeout): ~40 µs less CPU per idle tick
    engine = Engine(opts, inbox)
    writer = EventWriter(out, lambda: engine.session_id)
    engine.attach_writer(writer.write)
    engine.emit_startup()
    StdinReader(sys.stdin.buffer, inbox, console).start()
    _exit_cleanly_on_signals(engine)
    try:
        return run_loop(engine, inbox)
    finally:
        engine.shutdown()


def _exit_cleanly_on_signals(engine) -> None:
    """SIGTERM/SIGHUP end the loop like stdin EOF, so shutdown still kills every command's
    process group and MCP child and syncs the journal (the default action would orphan them).
    The handler only flips a flag: the loop sees it within one 30 ms tick."""
    import signal

    def stop(_signum, _frame) -> None:
        engine.exiting = True
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            signal.signal(sig, stop)
        except (ValueError, OSError):     # not the main thread (embedded use): keep defaults
            pass


def run_loop(engine, inbox: queue.SimpleQueue) -> int:
    """The main loop: one item at a time, a tick every ~30 ms for periodic work."""
    next_tick = time.monotonic() + TICK_SECONDS
    while not engine.exiting:
        timeout = max(0.0, next_tick - time.monotonic())
        try:
            kind, payload = inbox.get(timeout=timeout)
        except queue.Empty:
            kind, payload = None, None
        if kind == "line":
            engine.handle_line(payload)
        elif kind == "eof":
            engine.on_stdin_eof()
        elif kind == "toolong":
            engine.emit({"type": "error", "message": f"invalid command: line too long ({payload} bytes)"})
        elif kind == "worker":
            engine.handle_worker_message(payload)
        elif kind == "call":
            payload()
        now = time.monotonic()
        if now >= next_tick:
            engine.tick()
            next_tick = now + TICK_SECONDS
    return 0


def flush_and_exit(code: int = 0) -> None:
    for stream in (sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    logging.shutdown()
    os._exit(code)
