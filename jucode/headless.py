"""``jucode --headless [PROMPT...]``: one task for scripts and CI, JSON lines out, an exit code.

It drives the very same :class:`~jucode.engine.Engine` and :func:`~jucode.serve.run_loop` as
``jucode serve``; only the edges differ: the prompt comes from argv (or all of stdin), events
are written in their plain shape (no ``hello``, no ``session`` field), approvals cannot be
answered so each request is denied with upstream's explanation, and the run ends at the first
``status: ready`` or ``error`` with a ``final_result`` summary line.
"""

from __future__ import annotations

import queue
import sys
import time
from dataclasses import dataclass, field
from typing import Optional

import orjson

AUTO_DENY = ("auto-denying {name} ({call_id}): approvals cannot be answered in --headless mode; "
             "rerun with --approval-mode auto, auto-edit, or full-access to allow this class of tools")


@dataclass
class HeadlessArgs:
    prompt: str = ""
    full_auto: bool = False
    engine_argv: list = field(default_factory=list)   # flags handed to EngineOptions


def parse_args(argv: list[str]) -> HeadlessArgs:
    """Words form the prompt; ``--full-auto`` and the engine's own flags are taken out."""
    out = HeadlessArgs()
    words: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--full-auto":
            out.full_auto = True
        elif a in ("--approval-mode", "--replay"):
            out.engine_argv += argv[i:i + 2]
            i += 1
        elif a.startswith(("--approval-mode=", "--replay=")) or a in ("--demo", "--chat"):
            out.engine_argv.append(a)
        else:
            words.append(a)
        i += 1
    out.prompt = " ".join(words)
    return out


class Summary:
    """Accumulates what ``final_result`` reports, from the events as they are written."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.counts: dict[str, int] = {}
        self.usage = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "reasoning_tokens": 0}
        self.context_tokens = 0
        self.context_tokenizer: Optional[str] = None
        self.cost = 0.0
        self.assistant_bytes = 0
        self.denied = 0
        self.last_error: Optional[str] = None
        self.last_status: Optional[str] = None
        self.done = False

    def see(self, ev: dict) -> None:
        t = ev.get("type", "")
        self.counts[t] = self.counts.get(t, 0) + 1
        if t == "usage":
            for k in self.usage:
                self.usage[k] += int(ev.get(k) or 0)
        elif t == "context_usage":
            self.context_tokens = int(ev.get("tokens") or 0)
            self.context_tokenizer = ev.get("tokenizer")
            self.cost = float(ev.get("cost") or 0.0)
        elif t in ("assistant_delta", "reasoning_delta"):
            self.assistant_bytes += len(str(ev.get("delta") or "").encode("utf-8", "replace"))
        elif t == "error":
            self.last_error = str(ev.get("message"))
            self.done = True
        elif t == "status":
            self.last_status = ev.get("message")
            if ev.get("message") == "ready":
                self.done = True

    def final_event(self, mode: str) -> dict:
        ev = {"type": "final_result", "status": "error" if self.last_error is not None else "ready",
              "approval_mode": mode, "denied_approvals": self.denied}
        ev.update(self.usage)
        ev.update({"context_tokens": self.context_tokens, "context_tokenizer": self.context_tokenizer,
                   "cost": self.cost, "tool_calls": self.counts.get("tool_start", 0),
                   "subagent_events": self.counts.get("subagent_lifecycle", 0),
                   "assistant_chars": self.assistant_bytes,
                   "elapsed_ms": int((time.monotonic() - self.started) * 1000),
                   "last_error": self.last_error, "last_context_state": self.last_status,
                   "event_counts": dict(sorted(self.counts.items()))})
        return ev


def run_headless(argv: list[str], stdin=None, stdout=None) -> int:
    """Run one task; returns the exit code (1 when any ``error`` was seen)."""
    args = parse_args(argv)
    stdin = stdin if stdin is not None else sys.stdin
    out = stdout if stdout is not None else sys.stdout.buffer
    prompt = args.prompt
    if not prompt.strip():
        data = stdin.read()
        prompt = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    # Nothing but the writer below may reach the event stream.
    real_stdout, sys.stdout = sys.stdout, sys.stderr
    try:
        return _drive(args, prompt, out)
    finally:
        sys.stdout = real_stdout


def _drive(args: HeadlessArgs, prompt: str, out) -> int:
    from .engine import Engine, EngineOptions
    from .serve import EventWriter, run_loop

    opts = EngineOptions.from_argv(args.engine_argv)
    opts.headless = True
    inbox: queue.SimpleQueue = queue.SimpleQueue()   # C-level get(timeout): ~40 µs less CPU per idle tick
    engine = Engine(opts, inbox)
    writer = EventWriter(out)               # no session getter: the plain event shape
    summary = Summary()

    def deny(call_id: str) -> None:
        if call_id in engine.approvals:
            summary.denied += 1
            engine.approve({"op": "approve", "call_id": call_id, "decision": "deny"})

    def write(ev: dict) -> None:
        # model_status is serve's own deduplicated view of the selection, not a core event.
        if ev.get("type") == "model_status":
            return
        writer.write(ev, with_session=False)
        summary.see(ev)
        if ev.get("type") == "approval_request":
            engine.emit({"type": "info", "message": AUTO_DENY.format(name=ev.get("name"),
                                                                     call_id=ev.get("call_id"))})
            engine.call_soon(lambda cid=ev.get("call_id"): deny(cid))
        if summary.done:
            engine.request_exit()

    engine.attach_writer(write)
    mode = "full-access" if args.full_auto else (opts.approval_mode or "manual")
    try:
        engine.set_mode(mode)
        engine.ext.after_startup()
        if not summary.done:
            engine.handle_line(orjson.dumps({"op": "user_message", "content": prompt}))
        if not summary.done:
            run_loop(engine, inbox)
    finally:
        engine.shutdown()
    writer.write(summary.final_event(engine.live.mode), with_session=False)
    return 1 if summary.last_error is not None else 0


def headless_main(argv: list[str]) -> int:
    """CLI entry: runs the task and exits without interpreter teardown (worker threads may
    still sit in blocking reads after an interrupted turn)."""
    from .heap import single_arena
    from .serve import flush_and_exit
    single_arena()                  # before any thread exists (see jucode/heap.py)
    code = run_headless(argv)
    flush_and_exit(code)
    return code
