"""Upstream's retry policy around one provider stream (jucode-engine §4.3).

Why here and not in the SDK: the SDK's own retries use different delays, caps and status sets
and cannot report progress; upstream emits a ``retrying`` event before every new attempt and
sleeps interruptibly. Items/usage are only returned by a completed attempt, so a retry never
duplicates session items; text deltas of a failed attempt were already streamed, and the
front-end resets on ``retrying``.
"""

from __future__ import annotations

import logging
import os
import random
import threading
from typing import Callable, Optional

from jucode.llm.base import Interrupted, ModelError, ModelRequest, ModelResponse, Provider, Sink
from jucode.llm.errors import MAX_RETRY_AFTER

log = logging.getLogger(__name__)

BASE_DELAY_MS = 1000
MAX_DELAY_MS = 30000
DEFAULT_RETRY_ATTEMPTS = 5

OnRetry = Callable[[int, int, str, int], None]


def retry_attempts(configured: Optional[int] = None) -> int:
    """Retries after the first attempt: env ``JUCODE_RETRY_ATTEMPTS`` wins, then config, then 5."""
    env = os.environ.get("JUCODE_RETRY_ATTEMPTS", "").strip()
    if env:
        try:
            return max(0, int(env))
        except ValueError:
            log.warning("ignoring invalid JUCODE_RETRY_ATTEMPTS=%r", env)
    if configured is None:
        return DEFAULT_RETRY_ATTEMPTS
    try:
        return max(0, int(configured))
    except (TypeError, ValueError):
        return DEFAULT_RETRY_ATTEMPTS


def backoff_ms(failed_attempt: int, retry_after: Optional[float] = None,
               rng: Callable[[], float] = random.random) -> int:
    """Delay before attempt ``failed_attempt + 1``: 1 s doubling to 30 s × jitter [0.9, 1.1),
    or the server's Retry-After (≤ 60 s) when that is longer."""
    base = min(BASE_DELAY_MS * (2 ** max(0, failed_attempt - 1)), MAX_DELAY_MS)
    delay = base * (0.9 + 0.2 * rng())
    if retry_after is not None and 0 <= retry_after <= MAX_RETRY_AFTER:
        delay = max(delay, retry_after * 1000.0)
    return int(delay)


def stream_with_retry(provider: Provider, request: ModelRequest, sink: Sink, cancel: threading.Event,
                      attempts: Optional[int] = None, on_retry: Optional[OnRetry] = None) -> ModelResponse:
    """Stream with retries. ``attempts`` is the number of *retries* (config ``retry_attempts``;
    ``None`` → env/default), so up to ``attempts + 1`` requests are made.

    ``on_retry(attempt, max_attempts, reason, delay_ms)`` is called before sleeping, with the
    number of the attempt about to start (2, 3, …). Raises :class:`ModelError` (last failure) or
    :class:`Interrupted` (``cancel`` set, also during the back-off sleep).
    """
    max_attempts = retry_attempts(attempts) + 1
    attempt = 1
    while True:
        if cancel.is_set():
            raise Interrupted()
        try:
            return provider.stream(request, sink, cancel)
        except Interrupted:
            raise
        except ModelError as exc:
            if cancel.is_set():
                raise Interrupted()
            err = exc
        except Exception as exc:  # a provider bug must not kill the worker thread silently
            if cancel.is_set():
                raise Interrupted()
            log.exception("provider %s failed unexpectedly", getattr(provider, "name", "?"))
            err = ModelError(f"{type(exc).__name__}: {exc}", retryable=False)
        if not err.retryable or attempt >= max_attempts:
            raise err
        delay_ms = backoff_ms(attempt, err.retry_after)
        attempt += 1
        if on_retry is not None:
            on_retry(attempt, max_attempts, err.message, delay_ms)
        if cancel.wait(delay_ms / 1000.0):
            raise Interrupted()

