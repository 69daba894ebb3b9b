"""The engine's side of the session journal: recording, projection, context accounting, switching
sessions and compaction.

Everything persisted goes through here, on the main thread, into one
:class:`jucode.session.journal.SessionStore`. The store is created lazily on the first entry,
so starting the engine writes nothing but config.json. A journal write failure becomes an
``error`` event and the engine keeps serving (the conversation stays in memory; unwritten
lines are retried by the store on the next write).

Compaction has three entry points, all ending in :meth:`SessionHost._apply_outcome` on the
main thread: ``/compact`` and the overflow retry run as a pool job while :meth:`busy` holds new
turns back; automatic compaction runs inside the turn's worker before its first request
(:meth:`auto_compact_step`, installed by the session commands host through ``turn_extra``).
``interrupt`` stops either: the pool job through :meth:`interrupt_compaction` (the engine calls
it when no turn runs), the automatic one through the turn's own interrupt flag.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, Optional

from .messages import QueuedMessage

log = logging.getLogger("jucode.session")

NOTHING_TO_COMPACT_INFO = "nothing old enough to compact"
# Above this many entries (a resumed long session) counting moves to a worker even when the
# tokenizer is loaded: encoding thousands of unseen items would stall the main loop.
MAIN_THREAD_COUNT_ITEMS = 256


class SessionHost:
    def __init__(self, engine):
        from .session.paths import new_session_id
        self.engine = engine
        self.session_id = new_session_id()
        self.store = None
        self._counter = None
        self._write_failed = False
        self.compacting = False
        self._compact_cancel: Optional[threading.Event] = None   # the running /compact's, if any
        self.overflow_retried = False
        self.pending_retry = False
        self._retry_compaction = False      # the running compaction is an overflow retry's

    # -- store ----------------------------------------------------------------------------------
    def _ensure_store(self):
        if self.store is None:
            from .session.journal import SessionStore
            engine = self.engine
            try:
                store = SessionStore.create(str(engine.profile), engine.cwd, self.session_id)
            except Exception as e:   # unwritable profile: keep the conversation in memory
                from .session.paths import sessions_dir
                store = SessionStore(sessions_dir(str(engine.profile), engine.cwd), self.session_id, engine.cwd)
                self.report_write_error(e)
            store.model, store.reasoning_effort = engine.model, engine.effort
            self.store = store
        return self.store

    def ensure_store(self):
        """The current store, created (and locked) now if no entry was written yet."""
        return self._ensure_store()

    def report_write_error(self, e: Exception) -> None:
        """One ``error`` event per failure streak (a full disk fails every write)."""
        text = str(e)
        if not text.startswith("failed to "):
            text = f"failed to save session: {text}"
        if not self._write_failed:
            self.engine.emit({"type": "error", "message": text})
        self._write_failed = True
        log.warning("session write failed: %s", text)

    def append(self, kind: dict):
        try:
            entry = self._ensure_store().append(kind)
            self._write_failed = False
            return entry
        except Exception as e:  # disk full, permissions: report and keep serving
            self.report_write_error(e)
            return getattr(e, "entry", None)

    def guarded(self, fn: Callable[[], object]):
        """Run a store mutation; a write failure is reported, the in-memory change stays."""
        from .session.journal import SessionWriteError
        try:
            return fn()
        except SessionWriteError as e:
            self.report_write_error(e)
            return None

    def record_user(self, msg: QueuedMessage) -> None:
        store = self._ensure_store()
        engine = self.engine
        self.guarded(lambda: store.set_model(engine.model, engine.effort))
        kind = {"type": "user", "content": msg.text_for_model}
        if msg.model_text is not None and msg.model_text != msg.content:
            kind["display"] = msg.content
        if msg.files:
            kind["files"] = msg.files
            kind["display"] = msg.content
        self.append(kind)
        if msg.images:
            self.append({"type": "user_image", "paths": list(msg.images)})
        self.overflow_retried = False

    def record_item(self, item: dict) -> None:
        self.append({"type": "response_item", "item": item})
        self.overflow_retried = False          # a successful response re-arms the overflow retry

    def record_tool_output(self, msg: dict) -> None:
        kind = {"type": "tool_output", "call_id": msg["call_id"], "name": msg["name"],
                "output": msg["item"]["output"]}
        if msg.get("image_item"):
            kind["image"] = msg["image_item"]
        self.append(kind)

    def request_items(self) -> list:
        if self.store is None:
            return []
        from .session.projection import request_items
        return request_items(self.store)

    def turn_boundary(self) -> None:
        if self.store is None:
            return
        try:
            self.store.sync()
            self._write_failed = False
        except Exception as e:
            self.report_write_error(e)

    # -- switching sessions ------------------------------------------------------------------------
    def new_session(self) -> str:
        """Close the current session (releasing its lock) and start an empty one."""
        from .session.paths import new_session_id
        self._close_store()
        self.session_id = new_session_id()
        self._reset_flags()
        return self.session_id

    def resume(self, session_id: str):
        """Lock and load ``session_id`` and make it current. Raises ``SessionError`` (exact
        protocol text) and leaves the current session untouched when it cannot be opened."""
        from .session.journal import SessionStore
        engine = self.engine
        session_id = (session_id or "").strip()
        if self.store is not None and self.store.id == session_id:
            self._close_store()                # re-open our own session: drop our lock first
        store = SessionStore.open(str(engine.profile), engine.cwd, session_id)
        self._close_store()
        self.store = store
        self.session_id = store.id
        self._reset_flags()
        return store

    def _reset_flags(self) -> None:
        self._write_failed = False
        self.overflow_retried = False
        self.pending_retry = False

    def _close_store(self) -> None:
        store, self.store = self.store, None
        if store is not None:
            err = store.close()
            if err:
                self.report_write_error(Exception(err))

    # -- tokens -----------------------------------------------------------------------------------
    def counter(self):
        """The tokenizer; loads in the background on first use (never at startup)."""
        if self._counter is None:
            from .tokens import Counter
            self._counter = Counter(self.engine.model)
            self._counter.load_async()
        return self._counter

    def count_tokens(self, items: list) -> int:
        """Exact count (the counter memoizes per item, so only new items are encoded)."""
        return self.counter().count_items(items)

    def emit_context_usage(self) -> None:
        """Emit context_usage now when the tokenizer is loaded and the branch is short;
        otherwise project and count on a worker (which waits for the load) so the main loop
        never blocks on it. The worker gets a snapshot of the path: entries never change."""
        try:
            c = self.counter()
            store = self.store
            path = store.active_path() if store is not None else []
            if c.ready and len(path) <= MAIN_THREAD_COUNT_ITEMS:
                self.engine.emit(self._usage_event(self.count_tokens(self.request_items()), c))
                return
            engine = self.engine
            from .session.compactor import PathView
            view = PathView(path, store.cwd if store is not None else engine.cwd)

            def count_later():
                from .session.projection import request_items
                engine.post(self._usage_event(c.count_items(request_items(view)), c))
            engine.pool.submit(count_later, name="count-tokens")
        except Exception:  # accounting must never break a turn
            log.exception("context_usage failed")

    def _usage_event(self, tokens: int, c) -> dict:
        return {"type": "context_usage", "tokens": tokens, "tokenizer": c.tokenizer,
                "cost": round(self.engine.cost, 6)}

    # -- compaction -------------------------------------------------------------------------------
    def busy(self) -> bool:
        """New turns wait: a compaction runs, or an overflow retry is about to start one."""
        return self.compacting or self.pending_retry

    def retrying(self) -> bool:
        """An overflow retry is scheduled or compacting: the failed turn has not ended for the
        client (no ``ready`` was sent), so model_status keeps it busy too."""
        return self.pending_retry or (self.compacting and self._retry_compaction)

    def start_compaction(self, then: Optional[Callable[[], None]] = None) -> bool:
        """``/compact`` and the overflow retry: plan + summarize on the pool, :meth:`busy`
        meanwhile; ``then`` runs on the main thread afterwards (the retry's re-run), else
        ``status ready``. Returns False (after an ``error``) when it could not start."""
        from .session.compactor import run_compaction, summarizer_settings
        engine = self.engine
        try:
            settings = summarizer_settings(engine)
        except Exception as e:               # missing API key and the like
            engine.emit({"type": "error", "message": str(e)})
            return False
        store = self.store
        path = list(store.active_path()) if store is not None else []
        counter = self.counter()
        cancel = self._compact_cancel = threading.Event()
        self.compacting = True
        self._retry_compaction = then is not None

        def emit(ev: dict) -> None:
            # Through the main thread, dropped once interrupted: no progress after the failure.
            engine.call_soon(lambda: None if cancel.is_set() else engine.emit(ev))

        def job():
            out = run_compaction(path, engine.cwd, counter.count_text, settings, cancel, emit)
            engine.call_soon(lambda: self._compaction_done(store, out, then, cancel))
        engine.pool.submit(job, name="compact")
        return True

    def interrupt_compaction(self) -> bool:
        """``interrupt`` while ``/compact`` (or the overflow retry's compaction) runs: cancel the
        summarizer request (the provider drops the connection), keep the session uncompacted and
        end at once with ``compaction_failed {error: "interrupted"}`` + ``status interrupted``,
        so a front-end closes its compaction display like any interrupted request. The
        overflow retry's re-run is dropped. False when nothing was compacting (no-op)."""
        cancel = self._compact_cancel
        if not self.compacting or cancel is None:
            return False
        cancel.set()
        self._compact_cancel = None
        self.compacting = False
        self.engine.emit({"type": "compaction_failed", "error": "interrupted"})
        self.engine.emit({"type": "status", "message": "interrupted"})
        return True

    def _compaction_done(self, store, out, then, cancel: threading.Event) -> None:
        engine = self.engine
        if cancel.is_set():
            return                              # interrupted: already reported
        self._compact_cancel = None
        self.compacting = False
        if out.plan is None and out.error is None:
            if then is None:
                engine.emit({"type": "info", "message": NOTHING_TO_COMPACT_INFO})
        else:
            self._apply_outcome(store, out)
        if then is not None:
            then()
            return
        engine.emit({"type": "status", "message": engine.idle_status()})

    def _apply_outcome(self, store, out) -> bool:
        """Record a finished compaction (``compaction_end`` + ``context_usage``) or report
        ``compaction_failed``. Main thread. True when the summary is now in the journal."""
        from .session.compaction import apply_compaction
        from .session.entry import SessionError
        from .session.journal import SessionWriteError
        engine = self.engine
        error = out.error
        if error is None and (store is None or store is not self.store
                              or out.plan.replaced_through not in {e.id for e in store.active_path()}):
            error = "the conversation changed while compacting"
        if error is None:
            try:
                apply_compaction(store, out.summary, out.plan.replaced_through)
            except SessionWriteError as e:     # the entry is in memory; only saving failed
                self.report_write_error(e)
            except SessionError as e:
                error = str(e)
        if error is not None:
            engine.emit({"type": "compaction_failed", "error": error})
            return False
        engine.emit({"type": "compaction_end"})
        self.emit_context_usage()
        return True

    def auto_compact_step(self, limit: int, settings, ctx, items: list) -> list:
        """Worker side, before a turn's first request: compact when the counted input passes
        ``limit`` and return the new input (the old one on failure, as upstream continues
        with the full context). Never raises."""
        from .session.compactor import run_compaction
        engine = self.engine
        try:
            counter = self.counter()
            if not counter.ready and counter.upper_bound(items) <= limit:
                return items                # clearly small: don't wait for the tokenizer's load
            if counter.count_items(items) <= limit:
                return items
            path = engine.run_on_main(lambda: list(self.store.active_path()) if self.store else [],
                                      ctx.interrupt)
            if not path:
                return items
            out = run_compaction(path, engine.cwd, counter.count_text, settings, ctx.interrupt, ctx.emit)
            if out.interrupted or (out.plan is None and out.error is None):
                return items

            def finish():
                if engine.turn is None or engine.turn.id != ctx.turn_id:
                    return None                 # interrupted meanwhile
                ok = self._apply_outcome(self.store, out)
                engine.emit({"type": "status", "message": "streaming"})   # client stays busy
                return self.request_items() if ok else None
            new = engine.run_on_main(finish, ctx.interrupt)
            return new if new is not None else items
        except Exception:
            log.exception("automatic compaction failed")
            return items

    def maybe_overflow_retry(self, error: str) -> bool:
        """After a turn failed: a context overflow schedules one compaction + re-run."""
        from .session.compaction import plan_compaction
        from .session.compactor import OVERFLOW_INFO, is_overflow_error
        from .tokens import estimate_tokens
        if self.overflow_retried or self.store is None or not is_overflow_error(error):
            return False
        try:
            if plan_compaction(self.store, estimate_tokens) is None:
                return False
        except Exception:
            log.exception("overflow planning failed")
            return False
        self.overflow_retried = True
        self.pending_retry = True
        self.engine.emit({"type": "info", "message": OVERFLOW_INFO})
        return True

    def run_pending_retry(self) -> bool:
        """Engine tick (idle): start the scheduled overflow compaction, then re-run the turn
        on the existing context (no new user entry)."""
        if not self.pending_retry or self.compacting:
            return False
        self.pending_retry = False
        engine = self.engine

        def rerun():
            if engine.turn is None:
                engine.start_turn(None)
        if not self.start_compaction(then=rerun):
            # the failed turn sent no ending yet (engine._finish_turn): end it now
            engine.emit({"type": "status", "message": engine.idle_status()})
            return False
        engine.emit({"type": "status", "message": "compacting"})
        return True

    def close(self) -> Optional[str]:
        if self._compact_cancel is not None:
            self._compact_cancel.set()
        store, self.store = self.store, None
        if store is not None:
            try:
                return store.close()
            except Exception as e:
                return str(e)
        return None
