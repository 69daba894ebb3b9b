"""Shared plumbing for the wire APIs that go through the ``openai`` SDK (Responses, Chat, Azure).

Why: the SDK is imported lazily (0.4 s), its built-in retries must be off (we retry ourselves with
upstream's policy), and its exceptions must become :class:`ModelError` with the same texts and
retry flags whatever API raised them. The SDK is also lenient in ways we must not be (see
test-doubles §1.1), so callers read the raw response first and check the content type.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any, Iterable, Optional

from jucode.llm.base import ModelError, ModelRequest
from jucode.llm.errors import http_error, non_sse_error, stream_error, transport_error
from jucode.llm.pump import StreamHandle

HEADERS_MARK = object()        # first thing a reader yields: the response has begun
JSON_MARK = "__json_body__"    # (JSON_MARK, dict) yielded for a plain JSON reply


def session_headers(session_id: str) -> dict:
    h = {"Accept": "text/event-stream"}
    if session_id:
        h.update({"session-id": session_id, "thread-id": session_id, "x-client-request-id": session_id})
    return h


def make_client(api_key: Optional[str], base_url: str, default_headers: Optional[dict] = None,
                default_query: Optional[dict] = None):
    """One shared SDK client per (key, URL, headers, query).

    Why cached: building ``openai.OpenAI`` creates an SSL context and a connection pool (~20 ms),
    which every turn paid again; a shared client also reuses the keep-alive connection. The SDK
    client is thread-safe, and timeouts are passed per request, so sharing is safe.
    """
    import openai  # lazy: keeps engine startup fast

    key = (api_key or "unset", base_url,
           tuple(sorted((k, repr(v)) for k, v in (default_headers or {}).items())),
           tuple(sorted((default_query or {}).items())))
    with _clients_lock:
        client = _clients.get(key)
        if client is not None:
            return client
        kwargs: dict = {"api_key": api_key or "unset", "base_url": base_url, "max_retries": 0}
        if default_headers:
            kwargs["default_headers"] = default_headers
        if default_query:
            kwargs["default_query"] = default_query
        client = openai.OpenAI(**kwargs)
        if len(_clients) >= 8:
            _clients.pop(next(iter(_clients)))
        _clients[key] = client
        return client


_clients: dict = {}
_clients_lock = threading.Lock()


def timeout_for(request: ModelRequest):
    read = request.read_timeout or 300.0
    try:
        import httpx2 as httpx  # the transport openai 3.x uses
    except ImportError:  # pragma: no cover - older SDKs use httpx
        try:
            import httpx
        except ImportError:
            return read
    return httpx.Timeout(read, connect=request.connect_timeout or 30.0)


def map_sdk_error(exc: BaseException) -> BaseException:
    """SDK/httpx exception → ModelError; anything unrecognised is returned unchanged."""
    if isinstance(exc, ModelError):
        return exc
    try:
        import openai
    except ImportError:  # pragma: no cover
        return exc
    if isinstance(exc, openai.APIStatusError):
        resp = exc.response
        try:
            body = resp.text
        except Exception:
            body = json.dumps(exc.body) if exc.body is not None else str(exc)
        return http_error(exc.status_code, body, resp.headers)
    if isinstance(exc, openai.APIConnectionError):        # includes APITimeoutError
        return transport_error(exc)
    if isinstance(exc, openai.APIError):
        # An error object inside the stream (raised by the SDK for {"error": {...}} chunks).
        body = exc.body if isinstance(exc.body, dict) else {}
        msg = exc.message or json.dumps(body)
        return stream_error(msg, body.get("code"), body.get("type"), body.get("status"))
    mod = type(exc).__module__ or ""
    if mod.startswith(("httpx", "httpcore", "h11")) or isinstance(exc, (OSError, EOFError)):
        return transport_error(exc)
    return exc


def open_sdk_stream(create, kwargs: dict, handle: StreamHandle, label: str, url: str,
                    on_headers=None) -> Iterable:
    """Run ``create(**kwargs)`` through ``with_raw_response`` and yield the parsed stream's events.

    Yields :data:`HEADERS_MARK` first, then SDK events; for a JSON body yields ``(JSON_MARK, dict)``.
    Non-SSE, non-JSON bodies raise the §4.2 error naming ``url``. ``on_headers`` (optional)
    receives the response headers of every successful attempt.
    """
    try:
        raw = create(**kwargs)
        http = raw.http_response
        handle.add(http.close)
        if on_headers is not None:
            on_headers(raw.headers)
        ctype = (raw.headers.get("content-type") or "").lower()
        if "json" in ctype and "event-stream" not in ctype:
            data = http.read()
            try:
                body = json.loads(data)
            except ValueError:
                raise non_sse_error(label, url, ctype, data.decode("utf-8", "replace"))
            yield HEADERS_MARK
            yield (JSON_MARK, body)
            return
        if ctype and "event-stream" not in ctype:
            data = http.read()
            raise non_sse_error(label, url, ctype, data.decode("utf-8", "replace"))
        if os.environ.get("JUCODE_SDK_EVENTS"):
            stream = raw.parse()
            handle.add(stream.close)
            yield HEADERS_MARK
            yield from stream
            return
        yield HEADERS_MARK
        yield from raw_events(http)
    except ModelError:
        raise
    except Exception as exc:
        if handle.closed:
            return  # aborted on purpose; the caller already raised Interrupted
        raise map_sdk_error(exc) from exc


class Event(dict):
    """A decoded SSE JSON object readable like the SDK's models (``ev.delta``, ``ev.item``).

    Why not the SDK's own event models: building the pydantic classes for every Responses and
    Chat event type costs ~33 MB of RSS on the first stream, a third of the engine's memory
    budget, and the consumers only read a few fields. Missing keys raise AttributeError, so
    ``getattr(ev, name, default)`` behaves as with the SDK's optional fields.
    """

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def _stream_api_error(error: Any) -> ModelError:
    """The error an ``{"error": …}`` chunk means (same message rule as the SDK's Stream)."""
    body = dict(error) if isinstance(error, dict) else {}
    msg = body.get("message") if isinstance(body.get("message"), str) and body.get("message") else \
        "An error occurred during streaming"
    return stream_error(msg, body.get("code"), body.get("type"), body.get("status"))


def raw_events(http) -> Iterable:
    """Decode an SSE body into :class:`Event` dicts, stopping at ``[DONE]``.

    Mirrors the SDK's Stream: an object with a truthy ``error`` key raises a stream error;
    frames that are not JSON are skipped (keep-alive noise from some proxies).
    """
    from jucode.llm.sse import iter_sse

    for _name, data in iter_sse(http.iter_bytes()):
        if data.startswith("[DONE]"):
            return
        try:
            obj = json.loads(data, object_hook=Event)
        except ValueError:
            continue
        if isinstance(obj, dict) and obj.get("error"):
            raise _stream_api_error(obj["error"])
        yield obj


def as_dict(obj: Any) -> Any:
    """SDK model → plain dict (keeps extra fields such as ``reasoning_content``)."""
    if obj is None or isinstance(obj, (dict, list, str, int, float, bool)):
        return obj
    to_dict = getattr(obj, "to_dict", None)
    if to_dict is not None:
        try:
            return to_dict()
        except Exception:
            pass
    dump = getattr(obj, "model_dump", None)
    if dump is not None:
        return dump()
    return obj


def int_field(d: Optional[dict], *path, default: int = 0) -> int:
    cur: Any = d
    for key in path:
        if not isinstance(cur, dict):
            return default
        cur = cur.get(key)
    try:
        return int(cur) if cur is not None else default
    except (TypeError, ValueError):
        return default
