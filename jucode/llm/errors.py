"""Turning transport and server failures into :class:`ModelError` with upstream's retry policy.

Why one module: every wire API (SDK-based or hand-rolled) must agree on which failures are
retryable (jucode-engine §4.3) and on the protocol-visible error texts, otherwise the retry
loop and the front-end see different things depending on the provider.
"""

from __future__ import annotations

import email.utils
import re
import time
from typing import Mapping, Optional

from jucode.llm.base import ModelError

MAX_RETRY_AFTER = 60.0      # a longer Retry-After means "fail fast"
_BODY_LIMIT = 4000          # keep HTML error pages from flooding the UI

RETRYABLE_CODES = frozenset({
    "server_error", "internal_error", "rate_limit_exceeded", "overloaded_error", "api_error",
    "overloaded", "service_unavailable", "server_is_overloaded",
})

_RETRYABLE_TEXT = re.compile(
    r"decoding chunk|timed out|timeout|connection (?:reset|closed|aborted)|peer closed connection|"
    r"broken pipe|tls close_notify|unexpected end of file|unexpected eof|eof while|io error|"
    r"stream closed before (?:response\.completed|message_stop|finish_reason)|"
    r"remote ?protocol ?error|connection ?error|incomplete ?read|chunked ?encoding",
    re.IGNORECASE)

TRUNCATED_RESPONSES = "stream closed before response.completed"
TRUNCATED_ANTHROPIC = "stream closed before message_stop"
TRUNCATED_CHAT = "stream closed before finish_reason"


def parse_retry_after(headers: Optional[Mapping]) -> Optional[float]:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds or HTTP date); None if absent/bad."""
    if not headers:
        return None
    get = headers.get
    ms = get("retry-after-ms") or get("Retry-After-Ms")
    if ms:
        try:
            v = float(ms) / 1000.0
            if v >= 0:
                return v
        except ValueError:
            pass
    ra = get("retry-after") or get("Retry-After")
    if not ra:
        return None
    ra = str(ra).strip()
    try:
        v = float(ra)
        return v if v >= 0 else None
    except ValueError:
        pass
    try:
        dt = email.utils.parsedate_to_datetime(ra)
    except (TypeError, ValueError, IndexError):
        return None
    if dt is None:
        return None
    return max(0.0, dt.timestamp() - time.time())


def code_is_retryable(value) -> bool:
    """True for the in-stream error codes/types/statuses upstream retries (incl. numeric 429/5xx)."""
    if value is None:
        return False
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        v = int(value)
        return v == 429 or 500 <= v <= 599
    s = str(value).strip().lower()
    if s.isdigit():
        return code_is_retryable(int(s))
    return s in RETRYABLE_CODES


def message_is_retryable(message: str) -> bool:
    return bool(_RETRYABLE_TEXT.search(message or ""))


def http_error(status: int, body: str, headers: Optional[Mapping] = None) -> ModelError:
    """``LLM API returned HTTP <code>: <body>``; retryable for 429/≥500 unless Retry-After > 60 s."""
    text = (body or "").strip()
    if len(text) > _BODY_LIMIT:
        text = text[:_BODY_LIMIT] + "..."
    retry_after = parse_retry_after(headers)
    retryable = status == 429 or status >= 500
    if retry_after is not None and retry_after > MAX_RETRY_AFTER:
        retryable = False
    return ModelError(f"LLM API returned HTTP {status}: {text}", retryable=retryable,
                      retry_after=retry_after, status=status)


def transport_error(exc: BaseException) -> ModelError:
    """A failure with no HTTP status (connect refused, reset, timeout, bad chunking): retryable."""
    msg = str(exc) or exc.__class__.__name__
    cause = exc.__cause__ or exc.__context__
    if cause is not None and str(cause) and str(cause) not in msg:
        msg = f"{msg} ({cause})"
    return ModelError(f"io error: {msg}", retryable=True)


def non_sse_error(label: str, url: str, content_type: str, body: str) -> ModelError:
    """A 200 reply that is neither SSE nor JSON (usually an HTML page from a wrong base_url)."""
    start = (body or "")[:180]
    return ModelError(f"{label} returned non-JSON response from {url} (content-type: {content_type}). "
                      f"Check base_url; OpenAI-compatible endpoints usually end with /v1. Body starts: {start}...",
                      retryable=False)


def stream_error(message: str, *codes) -> ModelError:
    """An error reported inside the stream; retryable if any code/type/status is, or the text says IO."""
    retryable = any(code_is_retryable(c) for c in codes) or message_is_retryable(message)
    return ModelError(message, retryable=retryable)
