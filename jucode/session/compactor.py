"""Running a compaction: plan on a snapshot of the branch, stream the summary, report progress.

This is the worker-thread half of compaction (``compaction.py`` decides what to fold,
``session_host.py`` owns the main-thread half: snapshotting the branch, appending the result).
The worker never touches the session store: it gets the active path as a list of immutable
entries and hands a :class:`CompactOutcome` back, because the store belongs to the main thread.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Callable, Optional

from .compaction import (EMPTY_SUMMARY_ERROR, SUMMARY_INSTRUCTIONS, CompactionPlan,
                         plan_compaction, summary_request_input)

log = logging.getLogger("jucode.session")

# Lower-cased fragments of provider errors that mean "the request did not fit" (upstream list).
OVERFLOW_MARKERS = ("context_length_exceeded", "maximum context length", "prompt is too long",
                    "prompt too long", "exceeds the context window", "input exceeds the context",
                    "exceed context limit", "上下文过长")

OVERFLOW_INFO = "request exceeded the model's context window; compacting and retrying"


def is_overflow_error(text: Optional[str]) -> bool:
    low = (text or "").lower()
    return any(m in low for m in OVERFLOW_MARKERS)


class PathView:
    """What :func:`plan_compaction` needs of a store, over a snapshot taken on the main thread."""

    def __init__(self, path: list, cwd: str):
        self._path = path
        self.cwd = cwd

    def active_path(self) -> list:
        return self._path


@dataclass
class SummarizerSettings:
    """The summarizer call's parameters, gathered on the main thread."""

    make_provider: Callable[[], object]
    model: str
    effort: str
    session_id: str
    retry_attempts: int = 5
    read_timeout: float = 300.0
    connect_timeout: float = 30.0


@dataclass
class CompactOutcome:
    plan: Optional[CompactionPlan] = None     # None: nothing old enough to fold
    summary: str = ""
    error: Optional[str] = None               # set → compaction_failed {error}
    interrupted: bool = False


def summarizer_settings(engine) -> SummarizerSettings:
    """Upstream: ``compact_model`` (effort ``compact_reasoning_effort``, default low) only when
    that model is configured in ``models[]``; otherwise the session's own model and effort."""
    from ..turn_setup import _retry_attempts, provider_factory
    cfg = engine.config
    name = cfg.get("compact_model")
    configured = {m.get("name") for m in (cfg.get("models") or []) if isinstance(m, dict)}
    if name and name in configured:
        model, effort = name, cfg.get("compact_reasoning_effort") or "low"
        from ..models import effective_effort, resolve_model_info
        effort = effective_effort(resolve_model_info(cfg.data, model), effort)
    else:
        model, effort = engine.model, engine.effective_effort()
    return SummarizerSettings(
        make_provider=provider_factory(engine, model), model=model, effort=effort,
        session_id=engine.session_id, retry_attempts=_retry_attempts(engine),
        read_timeout=float(cfg.get("read_timeout_seconds") or 300),
        connect_timeout=float(cfg.get("connect_timeout_seconds") or 30))


def summarize(settings: SummarizerSettings, folded_text: str, cancel: threading.Event,
              on_progress: Callable[[int], None]) -> str:
    """Stream the summary; ``on_progress(output_tokens)`` gets the chars/4 estimate so far.
    Raises ``ModelError``/``Interrupted`` from the provider, ``ValueError`` for no output."""
    from ..llm.base import ModelRequest
    from ..llm.retry import stream_with_retry
    req = ModelRequest(model=settings.model, instructions=SUMMARY_INSTRUCTIONS,
                       input=summary_request_input(folded_text), tools=[],
                       reasoning_effort=settings.effort, session_id=settings.session_id,
                       read_timeout=settings.read_timeout, connect_timeout=settings.connect_timeout)
    chars = [0, -1]

    def sink(ev) -> None:
        if ev.kind == "text" and ev.delta:
            chars[0] += len(ev.delta)
            tokens = (chars[0] + 3) // 4
            if tokens != chars[1]:
                chars[1] = tokens
                on_progress(tokens)

    def on_retry(*_a) -> None:
        chars[0] = 0

    provider = settings.make_provider()
    try:
        resp = stream_with_retry(provider, req, sink, cancel, attempts=settings.retry_attempts,
                                 on_retry=on_retry)
    finally:
        try:
            provider.close()
        except Exception:
            pass
    from .entry import content_text, is_assistant_message
    text = "".join(content_text(i.get("content")) for i in resp.items if is_assistant_message(i))
    if not text.strip():
        raise ValueError(EMPTY_SUMMARY_ERROR)
    return text.strip()


def run_compaction(path: list, cwd: str, count_text: Callable[[str], int],
                   settings: SummarizerSettings, cancel: threading.Event,
                   emit: Callable[[dict], None]) -> CompactOutcome:
    """The whole worker side: plan, ``compaction_start``, progress, summary. Never raises."""
    from ..llm.base import Interrupted, ModelError
    try:
        plan = plan_compaction(PathView(path, cwd), count_text)
    except Exception as e:  # a planning bug must not kill the turn
        log.exception("compaction planning failed")
        return CompactOutcome(error=f"compaction failed: {e}")
    if plan is None:
        return CompactOutcome()
    emit({"type": "compaction_start"})
    try:
        summary = summarize(settings, plan.text, cancel,
                            lambda n: emit({"type": "compaction_progress", "output_tokens": n}))
    except Interrupted:
        return CompactOutcome(plan=plan, interrupted=True)
    except ModelError as e:
        return CompactOutcome(plan=plan, error=e.message)
    except ValueError as e:
        return CompactOutcome(plan=plan, error=str(e))
    except Exception as e:
        log.exception("summarizer failed")
        return CompactOutcome(plan=plan, error=str(e) or type(e).__name__)
    return CompactOutcome(plan=plan, summary=summary)
