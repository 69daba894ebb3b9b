"""The engine's side of the session journal: recording, projection and context accounting.

Everything persisted goes through here, on the main thread, into one
:class:`jucode.session.journal.SessionStore`. The store is created lazily on the first entry,
so starting the engine writes nothing but config.json. A journal write failure becomes an
``error`` event and the engine keeps serving.
"""

from __future__ import annotations

import logging
from typing import Optional

from .messages import QueuedMessage

log = logging.getLogger("jucode.session")


class SessionHost:
    def __init__(self, engine):
        from .session.paths import new_session_id
        self.engine = engine
        self.session_id = new_session_id()
        self.store = None
        self._counter = None
        self._write_failed = False
        self.compacting = False
        self.overflow_retried = False
        self.pending_retry = False

    # -- store ----------------------------------------------------------------------------------
    def _ensure_store(self):
        if self.store is None:
            from .session.journal import SessionStore
            self.store = SessionStore.create(str(self.engine.profile), self.engine.cwd, self.session_id)
        return self.store

    def append(self, kind: dict):
        try:
            entry = self._ensure_store().append(kind)
            self._write_failed = False
            return entry
        except Exception as e:  # disk full, permissions, lock: report and keep serving
            if not self._write_failed:
                self.engine.emit({"type": "error", "message": f"failed to save session: {e}"})
            self._write_failed = True
            log.warning("session write failed: %s", e)
            return None

    def record_user(self, msg: QueuedMessage) -> None:
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
        except Exception as e:
            if not self._write_failed:
                self.engine.emit({"type": "error", "message": f"failed to save session: {e}"})
            self._write_failed = True

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
        """Emit context_usage now when the tokenizer is loaded; otherwise count on a worker
        (which waits for the load) so the main loop never blocks on it."""
        try:
            items = self.request_items()
            c = self.counter()
            if c.ready:
                self.engine.emit(self._usage_event(self.count_tokens(items), c))
                return
            engine = self.engine

            def count_later():
                engine.post(self._usage_event(c.count_items(items), c))
            engine.pool.submit(count_later, name="count-tokens")
        except Exception:  # accounting must never break a turn
            log.exception("context_usage failed")

    def _usage_event(self, tokens: int, c) -> dict:
        return {"type": "context_usage", "tokens": tokens, "tokenizer": c.tokenizer,
                "cost": round(self.engine.cost, 6)}

    # -- compaction / overflow (filled in by jucode/session/compact_host) ---------------------------
    def busy(self) -> bool:
        return self.compacting

    def maybe_overflow_retry(self, error: str) -> bool:
        return False

    def run_pending_retry(self) -> bool:
        return False

    def close(self) -> Optional[str]:
        if self.store is not None:
            try:
                self.store.sync()
            except Exception:
                pass
            try:
                self.store.close()
            except Exception:
                pass
        return None
