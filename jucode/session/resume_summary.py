"""Resume summaries: a one-sentence "where was I" line for the ``/resume`` picker.

After the engine has sat idle for a while (upstream: 300 s) following some activity, a light
model condenses the last few entries of the active branch into ``Working: …`` or
``Completed: …``. The result is stored in the session state (``resume_summary`` /
``resume_status``) and so reaches the sidecar that :func:`.summary.list_sessions` reads; the
``resume_view`` items themselves stay ``{id, label, active}`` as upstream keeps the detail
internal.

It is a background nicety, so every rule here is about never getting in the way: the model call
runs on the worker pool, a starting turn or a session switch cancels it (its answer would
describe a stale state), it is tried once per idle period, and failures only reach the log.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from typing import Optional

log = logging.getLogger("jucode.session")

IDLE_ENV = "JUCODE_RESUME_SUMMARY_IDLE_SECONDS"
DEFAULT_IDLE_SECONDS = 300.0
LIGHT_MODEL = "gpt-5.4-mini"
RECENT_ENTRIES = 6
MAX_CHARS = 4000
MAX_RETRIES = 1                 # a background summary is not worth hammering a failing endpoint

# Our wording: one sentence, with the state as a fixed prefix we can parse back.
INSTRUCTIONS = (
    "You write the one-line status shown when a user comes back to a coding-agent session. "
    "From the recent conversation below, reply with exactly one sentence that starts with "
    "'Working:' if the user's latest request is still in progress or unanswered, or with "
    "'Completed:' if it was finished, followed by what was being done. Reply with that "
    "sentence only."
)
REQUEST_PREFIX = "Recent conversation:\n\n"


def idle_seconds() -> float:
    """The idle threshold; the env override exists so tests need not wait five minutes."""
    raw = os.environ.get(IDLE_ENV)
    if raw:
        try:
            value = float(raw)
            if value >= 0:
                return value
        except ValueError:
            log.warning("ignoring %s=%r (not a number)", IDLE_ENV, raw)
    return DEFAULT_IDLE_SECONDS


def render_recent(path: list, limit: int = RECENT_ENTRIES, max_chars: int = MAX_CHARS) -> str:
    """The last ``limit`` renderable entries of a branch as the compaction fold renders them,
    capped at ``max_chars``. The cap keeps the *end*: the latest exchange decides whether the
    work is finished."""
    from .compaction import _entry_block
    blocks: list = []
    for entry in reversed(path):
        block = _entry_block(entry)
        if block:
            blocks.append(block)
            if len(blocks) >= limit:
                break
    text = "\n\n".join(reversed(blocks))
    return text[-max_chars:] if len(text) > max_chars else text


def parse_summary(text: str) -> Optional[tuple]:
    """``(sentence, status)`` from the model's reply, status ``working`` or ``completed``.
    The prefix is stripped (the status carries it); a reply without one counts as working."""
    line = " ".join((text or "").split())
    if not line:
        return None
    low = line.lower()
    for prefix, status in (("working:", "working"), ("completed:", "completed")):
        if low.startswith(prefix):
            rest = line[len(prefix):].strip()
            return (rest, status) if rest else None
    return line, "working"


def summary_settings(engine):
    """Upstream's choice: ``gpt-5.4-mini`` when configured in ``models[]``, else the compact
    model (:func:`.compactor.summarizer_settings`: ``compact_model`` when configured, else the
    session's model). Main thread."""
    from .compactor import summarizer_settings
    settings = summarizer_settings(engine)
    configured = {m.get("name") for m in (engine.config.get("models") or []) if isinstance(m, dict)}
    if LIGHT_MODEL in configured and settings.model != LIGHT_MODEL:
        from ..models import effective_effort, resolve_model_info
        from ..turn_setup import provider_factory
        settings.make_provider = provider_factory(engine, LIGHT_MODEL)
        settings.model = LIGHT_MODEL
        settings.effort = effective_effort(resolve_model_info(engine.config.data, LIGHT_MODEL), "low")
    return settings


def generate(settings, recent: str, cancel: threading.Event) -> Optional[tuple]:
    """Worker side: one model call → ``(sentence, status)`` or None. Raises what the provider
    raises (``ModelError``, ``Interrupted``)."""
    from ..llm.base import ModelRequest
    from ..llm.retry import stream_with_retry
    from .entry import content_text, is_assistant_message
    from .projection import user_text_item
    req = ModelRequest(model=settings.model, instructions=INSTRUCTIONS,
                       input=[user_text_item(REQUEST_PREFIX + recent)], tools=[],
                       reasoning_effort=settings.effort, session_id=settings.session_id,
                       read_timeout=settings.read_timeout, connect_timeout=settings.connect_timeout)
    provider = settings.make_provider()
    resp = stream_with_retry(provider, req, lambda ev: None, cancel,
                             attempts=min(settings.retry_attempts, MAX_RETRIES))
    text = "".join(content_text(i.get("content")) for i in resp.items if is_assistant_message(i))
    return parse_summary(text)


@dataclass
class _Job:
    cancel: threading.Event
    store: object


class ResumeSummarizer:
    """Decides when to summarize and applies the result; driven by the session commands host's
    hooks, all on the main thread. ``idle_tick`` is O(1) until the threshold passes."""

    def __init__(self, engine):
        self.engine = engine
        self.threshold = idle_seconds()
        self._idle_since: Optional[float] = None   # armed: activity happened, not summarized yet
        self._job: Optional[_Job] = None

    def activity(self) -> None:
        """A turn ended (finished or interrupted): a new idle period starts now."""
        self.cancel()
        self._idle_since = time.monotonic()

    def disarm(self) -> None:
        """Session switched: nothing new happened in the new one."""
        self.cancel()
        self._idle_since = None

    def cancel(self) -> None:
        job, self._job = self._job, None
        if job is not None:
            job.cancel.set()

    def tick(self) -> None:
        """Every loop pass: a turn that started meanwhile makes a running summary stale."""
        if self._job is not None and self.engine.turn is not None:
            self.cancel()

    def idle_tick(self) -> None:
        since = self._idle_since
        if since is None or time.monotonic() - since < self.threshold:
            return
        engine = self.engine
        if engine.turn is not None or engine.sessions.busy() or engine.queue:
            return
        self._idle_since = None                       # once per idle period, even on failure
        self._start()

    def _start(self) -> None:
        engine = self.engine
        store = engine.sessions.store
        if store is None or engine.replay_script() is not None:   # replays must not lose a step
            return
        recent = render_recent(store.active_path())
        if not recent.strip():
            return
        try:
            settings = summary_settings(engine)
        except Exception as e:               # no API key and the like
            log.info("resume summary skipped: %s", e)
            return
        job = self._job = _Job(threading.Event(), store)

        def work():
            try:
                result = generate(settings, recent, job.cancel)
            except Exception as e:           # ModelError, Interrupted: log only
                log.info("resume summary failed: %s", getattr(e, "message", None) or e or type(e).__name__)
                result = None
            engine.call_soon(lambda: self._done(job, result))
        engine.pool.submit(work, name="resume-summary")

    def _done(self, job: _Job, result: Optional[tuple]) -> None:
        if self._job is not job:
            return                            # cancelled: a turn started or the session changed
        self._job = None
        sessions = self.engine.sessions
        if result is None or job.cancel.is_set() or sessions.store is not job.store:
            return
        summary, status = result
        store = job.store
        sessions.guarded(lambda: store.set_resume_summary(summary, status))
        sessions.turn_boundary()              # sync: the sidecar is what /resume lists
