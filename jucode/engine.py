"""The engine: the session's state and the turn lifecycle, owned by the main thread.

Workers never touch this object. They post messages into the inbox; the main loop hands them
to :meth:`Engine.handle_worker_message`, which records items, forwards public events and
ends turns. Ops arrive through :meth:`Engine.handle_line` and are dispatched by the op table
(``ops.CORE_OPS`` plus the ops hosts contribute).
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import orjson

from . import __version__
from .approvals import ApprovalAnswer, LiveSettings, ModeError, parse_mode
from .engine_controls import EngineControls
from .logjson import setup_logging
from .config import load_config, profile_dir
from .messages import QueuedMessage, check_image, normalize_paths, user_item
from .pool import WorkerPool

log = logging.getLogger("jucode.engine")


@dataclass
class EngineOptions:
    chat: bool = False
    approval_mode: Optional[str] = None
    demo: bool = False
    replay: Optional[str] = None
    headless: bool = False
    # Servers for this engine only (ACP session/new ``mcpServers``): used, never persisted.
    mcp_servers: list = field(default_factory=list)

    @classmethod
    def from_argv(cls, argv: list[str]) -> "EngineOptions":
        o = cls()
        it = iter(argv)
        for a in it:
            if a == "--chat":
                o.chat = True
            elif a == "--demo":
                o.demo = True
            elif a == "--replay" or a.startswith("--replay="):
                path = next(it, None) if a == "--replay" else a.split("=", 1)[1]
                o.replay = os.path.abspath(path) if path else None   # before any chdir (--chat)
            elif a == "--approval-mode":
                o.approval_mode = next(it, None)
            elif a.startswith("--approval-mode="):
                o.approval_mode = a.split("=", 1)[1]
        return o


class Turn:
    """The running turn as the main thread sees it."""

    def __init__(self, turn_id: int, ctx, message: Optional[QueuedMessage]):
        self.id = turn_id
        self.ctx = ctx
        self.message = message
        self.steered: list = []          # QueuedMessages moved into the worker's inbox, unread
        self.future = None               # the worker job running the turn


class Engine(EngineControls):
    def __init__(self, opts: EngineOptions, inbox: queue.SimpleQueue):
        self.opts = opts
        self.inbox = inbox
        self.exiting = False
        self._write: Callable[[dict], None] = lambda ev: None
        self.profile = profile_dir()
        self.profile.mkdir(parents=True, exist_ok=True)
        setup_logging(self.profile)
        self.config = load_config(self.profile)
        self.cwd = os.path.realpath(os.getcwd())
        if opts.chat:
            chats = self.profile / "chats"
            chats.mkdir(parents=True, exist_ok=True)
            os.chdir(chats)
            self.cwd = os.path.realpath(str(chats))
        self.pool = WorkerPool()
        self.live = LiveSettings(mode=self._initial_mode())
        self.queue: list[QueuedMessage] = []
        self.turn: Optional[Turn] = None
        self._turn_seq = 0
        self.approvals: dict = {}              # call_id -> Approval
        self.read_state: dict = {}
        self.staged_images: list = []
        self._last_model_status: Optional[bytes] = None
        self._startup_errors: list[str] = []
        self.totals = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "reasoning_tokens": 0}
        self.cost = 0.0
        self.last_failed = False
        self.model = self.config.get("model") or "gpt-5"
        self.effort = self.config.get("reasoning_effort") or "medium"
        if self.config.load_error:
            self._startup_errors.append(f"failed to load config.json: {self.config.load_error} "
                                        f"(using defaults; the file was left untouched)")
        else:
            from .config_checks import config_problems
            self._startup_errors.extend(config_problems(self.config.data))
        try:    # a stored effort the model does not offer: medium if it does, else its first
            from .llm.catalog import normalize_effort
            self.effort = normalize_effort(self.model_info(), self.effort)
        except Exception:
            log.exception("effort normalization failed")
        from .session_host import SessionHost
        self.sessions = SessionHost(self)
        from .extensions import Extensions
        self.ext = Extensions(self)
        self.shell_sessions = None
        self._key_missing: Optional[bool] = None
        self._last_command_list: Optional[bytes] = None
        self.providers: dict = {}               # wire providers reused across turns (turn_setup)
        self._model_status_key: Optional[tuple] = None
        self._model_status: dict = {}
        self._last_model_status_obj: Optional[dict] = None

    # -- output -----------------------------------------------------------------------------
    def attach_writer(self, write: Callable[[dict], None]) -> None:
        self._write = write

    def emit(self, ev: dict) -> None:
        """Write a public event (internal ``_`` events never reach stdout)."""
        if ev.get("type", "").startswith("_"):
            return
        if ev.get("type") == "model_status":
            self._last_model_status = orjson.dumps(ev)
        self.ext.observe(ev)
        self._write(ev)

    def post(self, msg: dict) -> None:
        """Thread-safe: workers and background threads hand messages to the main thread."""
        self.inbox.put(("worker", msg))

    def call_soon(self, fn: Callable[[], None]) -> None:
        self.inbox.put(("call", fn))

    def run_on_main(self, fn: Callable[[], object], interrupt: Optional[threading.Event] = None,
                    timeout: Optional[float] = None):
        """From a worker: run ``fn`` on the main thread (where engine state lives) and wait for
        its result. Raises what ``fn`` raised; returns None if interrupted first."""
        done = threading.Event()
        box: dict = {}

        def wrapper():
            try:
                box["value"] = fn()
            except BaseException as e:  # handed back to the worker
                box["error"] = e
            finally:
                done.set()
        self.call_soon(wrapper)
        deadline = None if timeout is None else time.monotonic() + timeout
        while not done.wait(0.05):
            if (interrupt is not None and interrupt.is_set()) or self.exiting:
                return None
            if deadline is not None and time.monotonic() > deadline:
                return None
        if "error" in box:
            raise box["error"]
        return box.get("value")

    def refresh_commands(self) -> None:
        """Re-emit command_list if its content changed (skills, custom commands, MCP prompts).

        Headless runs never list commands (no palette to fill; upstream's headless output has
        none): they skip the startup batch, so the dedup would otherwise see the first
        reload's list as new and print it mid-turn."""
        if self.opts.headless:
            return
        ev = self.ext.command_list_event()
        data = orjson.dumps(ev)
        if data != self._last_command_list:
            self._last_command_list = data
            self.emit(ev)

    @property
    def session_id(self) -> str:
        return self.sessions.session_id

    # -- startup ----------------------------------------------------------------------------
    def _initial_mode(self) -> str:
        for candidate in (self.opts.approval_mode, self.config.get("approval_mode")):
            if candidate:
                try:
                    return parse_mode(candidate)
                except ModeError as e:
                    log.warning("%s", e)
        return "manual"

    def emit_startup(self) -> None:
        info = self.model_info()
        self.emit({"type": "startup", "version": __version__, "session_id": self.session_id,
                   "profile_dir": str(self.profile), "config_path": str(self.config.path), "cwd": self.cwd,
                   "model": self.model, "context_window": info.context_window})
        self.emit(self.model_status_event())
        self.refresh_commands()
        self.emit({"type": "approval_mode", "mode": self.live.mode})
        self.emit({"type": "mcp_servers", "servers": self.ext.mcp_servers_view()})
        for ev in self.ext.startup_extra_events():
            self.emit(ev)
        for msg in self._startup_errors:
            self.emit({"type": "error", "message": msg})
        self.ext.after_startup()
        if self.config.get("prewarm", True) is not False:
            from .models import prewarm
            prewarm(self)      # tokenizer + SDK on a background thread, after the batch is out

    def model_info(self):
        from .models import resolve_model_info
        return resolve_model_info(self.config.data, self.model)

    def effective_effort(self) -> str:
        from .models import effective_effort
        return effective_effort(self.model_info(), self.effort)

    def idle_status(self) -> str:
        """The status that ends a turn: ``ready``, or ``queued: N`` when messages wait."""
        return f"queued: {len(self.queue)}" if self.queue else "ready"

    def model_state(self) -> str:
        if self.turn is None:
            # an overflow retry between its failed request and the re-run is still the turn
            return "streaming" if self.sessions.retrying() else "ready"
        if self.queue:
            return f"queued: {len(self.queue)}"
        return "streaming"

    def model_status_event(self) -> dict:
        """Built only when an input changed: the 30 ms tick asks for it constantly."""
        key = (self.model, self.effort, self.model_state(), self.config.version, self._key_missing)
        if key != self._model_status_key:
            from .models import model_status_fields
            self._model_status = dict({"type": "model_status"}, **model_status_fields(self, key[2]))
            self._model_status_key = (self.model, self.effort, key[2], self.config.version, self._key_missing)
        return self._model_status

    # -- input ------------------------------------------------------------------------------
    def handle_line(self, raw: bytes) -> None:
        from .ops import dispatch_line
        try:
            dispatch_line(self, raw)
        except Exception as e:  # nothing from the pipe can kill the engine
            log.exception("op failed")
            self.emit({"type": "error", "message": f"internal error handling command: {e}"})

    def on_stdin_eof(self) -> None:
        self.request_exit()

    def request_exit(self) -> None:
        self.exiting = True

    # -- messages and the queue ---------------------------------------------------------------
    def attachments(self, images, files) -> tuple[list, list]:
        ok_images = []
        staged, self.staged_images = self.staged_images, []
        for p in staged + normalize_paths(images, self.cwd):
            reason = check_image(p)
            if reason:
                self.emit({"type": "info", "message": f"skipped attachment {reason}"})   # "<path>: why"
            else:
                ok_images.append(p)
        ok_files = []
        for p in normalize_paths(files, self.cwd):
            if os.path.exists(p):
                ok_files.append(p)
            else:
                self.emit({"type": "info", "message": f"skipped attachment {p}: file not found"})
        return ok_images, ok_files

    def submit(self, msg: QueuedMessage) -> None:
        """Start a turn with the message, or queue it behind the running one."""
        if self.turn is not None or self.sessions.busy():
            self.queue.append(msg)
            self.emit_pending()
            self.emit({"type": "status", "message": f"queued: {len(self.queue)}"})
            self.emit({"type": "status", "message": "streaming"})   # keep clients busy (notes §4)
            return
        self.start_turn(msg)

    def emit_pending(self) -> None:
        self.emit({"type": "pending_messages", "messages": [m.content for m in self.queue]})

    def echo(self, msg: QueuedMessage) -> None:
        ev = {"type": "user_message", "content": msg.content}
        if msg.images:
            ev["images"] = msg.images
        if msg.files:
            ev["files"] = msg.files
        self.emit(ev)

    def start_turn(self, msg: Optional[QueuedMessage], echo: bool = True) -> None:
        if msg is not None:
            if echo:
                self.echo(msg)
            reason = self.ext.user_prompt_blocked(msg)
            if reason:
                self.emit({"type": "error", "message": f"blocked by user_prompt_submit hook: {reason}"})
                self.emit({"type": "status", "message": "ready"})
                return
            self.sessions.record_user(msg)
        from .turn_setup import build_turn
        try:
            turn = build_turn(self, msg)
        except Exception as e:  # a turn that cannot start still ends with a non-busy status
            if not isinstance(e, TurnSetupError):
                log.exception("turn setup failed")
            self.emit({"type": "error", "message": str(e) if isinstance(e, TurnSetupError)
                       else f"failed to start the turn: {e}"})
            self.emit({"type": "status", "message": "ready"})
            self.last_failed = True
            return
        self.turn = turn
        self.sessions.emit_context_usage()
        self.emit({"type": "status", "message": "streaming"})
        turn.future = self.pool.submit(self._run_turn_job, turn, name="turn")

    def _run_turn_job(self, turn: Turn) -> None:
        from .turn import run_turn
        items = turn.ctx.settings.extra.pop("_input")
        prepare = turn.ctx.settings.extra.pop("_prepare_input", None)   # auto-compaction (session host)
        if prepare is not None:
            try:
                items = prepare(turn.ctx, items)
            except Exception:  # compaction trouble must not leave the turn without an end
                log.exception("preparing the turn input failed")
        run_turn(turn.ctx, items)

    # -- worker messages ----------------------------------------------------------------------
    def handle_worker_message(self, msg: dict) -> None:
        turn_id = msg.pop("_turn", None)
        if turn_id is not None and (self.turn is None or self.turn.id != turn_id):
            if msg.get("type") == "_approval":
                msg["approval"].resolve(ApprovalAnswer("deny"))
            return                                  # late events of an interrupted turn
        t = msg.get("type", "")
        handler = getattr(self, "_w" + t, None) if t.startswith("_") else None
        if handler is not None:
            handler(msg)
        elif t.startswith("_"):
            self.ext.internal(msg)
        else:
            self.emit(msg)

    def _w_response(self, msg: dict) -> None:
        for item in msg["items"]:
            self.sessions.record_item(item)
        u = msg["usage"]
        for k in self.totals:
            self.totals[k] += int(u.get(k) or 0)
        from .models import cost_of
        self.cost += cost_of(self.model_info(), u)
        self.emit(dict({"type": "usage"}, **u))
        self.sessions.emit_context_usage()

    def _w_helper_usage(self, msg: dict) -> None:
        """A helper model's request (the safety classifier): it costs money like any other."""
        from .models import cost_of, resolve_model_info
        self.cost += cost_of(resolve_model_info(self.config.data, msg["model"]), msg["usage"])

    def _w_item(self, msg: dict) -> None:
        self.sessions.record_item(msg["item"])

    def _w_tool_result(self, msg: dict) -> None:
        self.sessions.record_tool_output(msg)
        self.sessions.emit_context_usage()

    def _w_steered(self, msg: dict) -> None:
        qm: QueuedMessage = msg["message"]["queued"]
        if self.turn and qm in self.turn.steered:
            self.turn.steered.remove(qm)
        self.sessions.record_user(qm)
        self.echo(qm)
        self.emit_pending()

    def _w_approval(self, msg: dict) -> None:
        approval = msg["approval"]
        if approval.name in self.live.allowlist:
            approval.resolve(ApprovalAnswer("allow"))
            return
        if not self.live.attended:
            self.ext.defer_approval(approval)
            return
        self.approvals[approval.call_id] = approval
        self.emit(approval.request_event())

    def _w_turn_end(self, msg: dict) -> None:
        turn = self.turn
        if turn is None:
            return
        if msg.get("interrupted"):
            return
        self._finish_turn(turn, error=msg.get("error"))

    def _finish_turn(self, turn: Turn, error: Optional[str] = None) -> None:
        self.turn = None
        self._deny_all_approvals()
        self._requeue_unread(turn)
        self.ext.turn_finished(turn, error)
        self.last_failed = bool(error)
        if error and self.sessions.maybe_overflow_retry(error):
            # Compaction and the re-run follow on the next idle tick: for the client the turn
            # goes on, so none of a finished turn's ending (context_usage, stop hooks, ``ready``).
            self.sessions.turn_boundary()
            return
        if error:
            self.emit({"type": "error", "message": error})
        self.sessions.turn_boundary()
        self.sessions.emit_context_usage()
        self.ext.run_stop_hooks()
        if self.queue:
            self.emit_pending()
        self.emit({"type": "status", "message": self.idle_status()})

    def _requeue_unread(self, turn: Turn) -> None:
        unread = []
        while True:
            try:
                unread.append(turn.ctx.steer_inbox.get_nowait()["queued"])
            except queue.Empty:
                break
        if unread:
            self.queue[0:0] = unread

    def _deny_all_approvals(self) -> None:
        for a in list(self.approvals.values()):
            a.resolve(ApprovalAnswer("deny"))
        self.approvals.clear()

    # -- interrupt, steer, unqueue ---------------------------------------------------------------
    def interrupt(self, quiet: bool = False) -> bool:
        turn = self.turn
        if turn is None:
            return self.sessions.interrupt_compaction()   # /compact runs without a turn
        turn.ctx.interrupt.set()    # the stream and any shell command poll it and stop at once
        self.turn = None
        self._deny_all_approvals()
        self._requeue_unread(turn)
        if not quiet:
            # Upstream order: the info and status first, then the children's ``closed`` events.
            self.emit({"type": "info", "message": "request interrupted"})
            self.emit({"type": "status", "message": "interrupted"})
        self.ext.turn_interrupted(turn)
        self.sessions.turn_boundary()
        return True

    @staticmethod
    def pick_index(index, length: int) -> Optional[int]:
        if length == 0:
            return None
        if index is None:
            return 0
        if isinstance(index, bool) or not isinstance(index, int):
            raise ValueError("index must be an integer")
        i = index + length if index < 0 else index
        return i if 0 <= i < length else None

    def steer(self, index) -> None:
        i = self.pick_index(index, len(self.queue))
        if self.turn is None or i is None:
            return
        msg = self.queue.pop(i)
        if msg.images:
            self.interrupt(quiet=True)
            self.emit({"type": "status", "message": "steering"})
            self.emit_pending()
            self.start_turn(msg)
            return
        self.turn.steered.append(msg)
        self.turn.ctx.steer_inbox.put({"queued": msg, "item": user_item(msg.text_for_model)})
        self.emit({"type": "status", "message": "steering"})
        self.emit_pending()

    def unqueue(self, index) -> None:
        i = self.pick_index(index, len(self.queue))
        if i is None:
            return
        msg = self.queue.pop(i)
        self.emit_pending()
        ev = {"type": "unqueued", "content": msg.content, "images": msg.images}
        if msg.files:
            ev["files"] = msg.files
        self.emit(ev)

    def interrupt_and_send(self, index) -> None:
        i = self.pick_index(index, len(self.queue))
        if i is None:
            self.interrupt()
            return
        msg = self.queue.pop(i)
        self.queue.insert(0, msg)
        self.interrupt()

    # -- periodic work ---------------------------------------------------------------------------
    def tick(self) -> None:
        ms = self.model_status_event()
        if ms is not self._last_model_status_obj:
            self._last_model_status_obj = ms
            if orjson.dumps(ms) != self._last_model_status:
                self.emit(ms)
        if self.turn is None and not self.exiting:
            if self.sessions.run_pending_retry():
                return
            if self.queue and not self.sessions.busy():
                msg = self.queue.pop(0)
                self.emit_pending()
                self.start_turn(msg)
                return
            self.ext.idle_tick()
        self.ext.tick()

    def shutdown(self) -> None:
        if self.turn is not None:
            turn = self.turn
            self.interrupt(quiet=True)
            if turn.future is not None:           # let the worker kill its process group
                try:
                    turn.future.result(timeout=2.0)
                except Exception:
                    pass
        try:
            from .tools.shell import kill_all_live
            kill_all_live()
        except ImportError:
            pass
        try:
            self.ext.close()
            if self.shell_sessions is not None:
                self.shell_sessions.close_all()
        finally:
            self.sessions.close()
            self.pool.close()


class TurnSetupError(Exception):
    """A turn could not start (missing API key, unreadable prompt, ...)."""
