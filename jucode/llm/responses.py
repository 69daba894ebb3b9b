"""OpenAI Responses API (also ``codex`` and ``azure`` routes) over the ``openai`` SDK.

Why a hand-written state machine over the raw ``responses.create(stream=True)`` iterator: the
SDK's helper is stricter than real servers and its raw stream silently ends on truncation,
yields flat ``error`` events instead of raising, and parses unknown event types into the wrong
class (test-doubles §1.1). We dispatch on ``event.type`` strings and treat a missing terminal
event as a retryable failure. Items and usage are buffered and returned only on completion.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Optional

from jucode.llm.base import ModelError, ModelRequest, ModelResponse, Provider, Sink, StreamEvent, Usage
from jucode.llm.errors import TRUNCATED_RESPONSES, stream_error
from jucode.llm.openai_common import (HEADERS_MARK, JSON_MARK, as_dict, int_field, make_client,
                                      open_sdk_stream, session_headers, timeout_for)
from jucode.llm.pump import StreamHandle, pumped

_DROP_TYPES = frozenset({"thinking", "redacted_thinking"})


def sanitize_input(items: list) -> list:
    """Canonical items → Responses input: drop Anthropic thinking, strip ``id``/``is_error``.

    Reasoning items without ``encrypted_content`` are dropped too: with ``store:false`` the server
    cannot resolve them by id, and replaying them fails the request.
    """
    out = []
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind in _DROP_TYPES:
            continue
        if kind == "reasoning" and not item.get("encrypted_content"):
            continue
        clean = {k: v for k, v in item.items() if k not in ("id", "is_error", "status")}
        out.append(clean)
    return out


def usage_from(u: Optional[dict]) -> Usage:
    if not isinstance(u, dict):
        return Usage()
    cached = (int_field(u, "cached_input_tokens") or int_field(u, "cached_prompt_tokens")
              or int_field(u, "input_tokens_details", "cached_tokens"))
    return Usage(input_tokens=int_field(u, "input_tokens"), cached_input_tokens=cached,
                 output_tokens=int_field(u, "output_tokens"),
                 reasoning_tokens=int_field(u, "output_tokens_details", "reasoning_tokens"))


def canonical_item(item: dict) -> Optional[dict]:
    """An output item as we store it (no server ids/status; message text parts only)."""
    kind = item.get("type")
    if kind == "message":
        parts = []
        for p in item.get("content") or []:
            if isinstance(p, dict) and p.get("type") == "output_text":
                parts.append({"type": "output_text", "text": p.get("text") or ""})
            elif isinstance(p, dict) and p.get("type") == "refusal":
                parts.append({"type": "output_text", "text": p.get("refusal") or ""})
        return {"type": "message", "role": "assistant", "content": parts}
    if kind == "function_call":
        return {"type": "function_call", "call_id": item.get("call_id") or "", "name": item.get("name") or "",
                "arguments": item.get("arguments") or "{}"}
    if kind == "reasoning":
        out = {"type": "reasoning", "summary": item.get("summary") or []}
        if item.get("encrypted_content"):
            out["encrypted_content"] = item["encrypted_content"]
        if item.get("content"):
            out["content"] = item["content"]
        return out
    if not kind:
        return None
    return {k: v for k, v in item.items() if k not in ("id", "status")}


TURN_STATE_HEADER = "x-codex-turn-state"
_AUTH_CLAIM = "https://api.openai.com/auth"


def chatgpt_account_id(token: Optional[str]) -> str:
    """The ChatGPT account id inside a codex access token (a JWT), or "" for any other key.

    Why decode without verifying: the server verifies the token; the engine only needs the
    claim to fill the ``chatgpt-account-id`` header the ChatGPT backend routes on.
    """
    parts = (token or "").split(".")
    if len(parts) != 3:
        return ""
    try:
        import base64

        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, TypeError):
        return ""
    if not isinstance(payload, dict):
        return ""
    auth = payload.get(_AUTH_CLAIM)
    value = (auth.get("chatgpt_account_id") if isinstance(auth, dict) else None) or payload.get("chatgpt_account_id")
    return value if isinstance(value, str) else ""


class ResponsesProvider(Provider):
    """``protocol``: ``responses`` (``{base}/responses``), ``codex`` (``{base}/codex/responses``) or
    ``azure`` (``{base}/responses?api-version=…`` with an ``api-key`` header)."""

    name = "responses"
    label = "OpenAI Responses API"

    def __init__(self, api_key: Optional[str], base_url: str, protocol: str = "responses",
                 extra_headers: Optional[dict] = None, account_id: str = ""):
        self.api_key = api_key
        self.base_url = (base_url or "https://api.openai.com/v1").rstrip("/")
        self.protocol = protocol
        self.name = protocol
        self.extra_headers = dict(extra_headers or {})
        self.account_id = account_id or (chatgpt_account_id(api_key) if protocol == "codex" else "")
        self._turn_state: dict = {}   # codex: session id -> x-codex-turn-state, captured once
        self._client = None
        self._client_lock = threading.Lock()

    # -- wiring ----------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        if self.protocol == "codex":
            return f"{self.base_url}/codex/responses"
        if self.protocol == "azure":
            return f"{self.base_url}/responses?api-version={self._azure_version()}"
        return f"{self.base_url}/responses"

    @staticmethod
    def _azure_version() -> str:
        return os.environ.get("AZURE_OPENAI_API_VERSION") or "v1"

    def client(self):
        with self._client_lock:
            if self._client is None:
                headers = dict(self.extra_headers)
                query = None
                base = self.base_url
                if self.protocol == "azure":
                    import openai

                    headers["api-key"] = self.api_key or ""
                    headers["Authorization"] = openai.Omit()
                    query = {"api-version": self._azure_version()}
                elif self.protocol == "codex":
                    base = f"{self.base_url}/codex"
                    headers.update({"OpenAI-Beta": "responses=experimental", "originator": "jucode",
                                    "version": "0.153.0"})
                    if self.account_id:
                        headers["chatgpt-account-id"] = self.account_id
                self._client = make_client(self.api_key, base, headers, query)
            return self._client

    def build_body(self, request: ModelRequest) -> dict:
        body: dict = {"model": request.model, "instructions": request.instructions}
        if request.session_id:
            body["prompt_cache_key"] = request.session_id
        effort = (request.reasoning_effort or "").strip()
        if effort:   # "none" is sent too (it is not the server's default), without a summary
            body["reasoning"] = {"effort": effort} if effort == "none" else {"effort": effort, "summary": "auto"}
        body["input"] = sanitize_input(request.input)
        if request.tools:
            body["tools"] = request.tools
            body["tool_choice"] = "auto"
            body["parallel_tool_calls"] = True
        if request.max_output_tokens:
            body["max_output_tokens"] = max(1, int(request.max_output_tokens))
        body["store"] = False
        body["include"] = ["reasoning.encrypted_content"]
        body["stream"] = True
        return body

    # -- streaming -------------------------------------------------------------------------------
    def stream(self, request: ModelRequest, sink: Sink, cancel: threading.Event) -> ModelResponse:
        body = self.build_body(request)
        client = self.client()
        model = body.pop("model")
        body.pop("stream")
        headers = session_headers(request.session_id)
        on_headers = None
        if self.protocol == "codex":
            state = self._turn_state.get(request.session_id or "")
            if state:
                headers[TURN_STATE_HEADER] = state
            else:
                on_headers = lambda h: self._capture_turn_state(request.session_id or "", h)  # noqa: E731
        if self.protocol == "azure":
            import openai

            headers["Authorization"] = openai.Omit()   # Azure authenticates with api-key only
        kwargs = {"model": model, "stream": True, "extra_body": body,
                  "extra_headers": headers, "timeout": timeout_for(request)}
        handle = StreamHandle()     # per request: providers are shared by concurrent turns
        create = client.responses.with_raw_response.create
        events = pumped(lambda h: open_sdk_stream(create, kwargs, h, self.label, self.url, on_headers),
                        cancel, handle)
        return self._consume(events, sink)

    def _capture_turn_state(self, session_id: str, response_headers) -> None:
        value = response_headers.get(TURN_STATE_HEADER)
        if value and session_id not in self._turn_state:
            self._turn_state[session_id] = value

    def _consume(self, events, sink: Sink) -> ModelResponse:
        added: dict = {}          # output_index/item_id -> partial item dict
        done: list = []           # (output_index, item)
        by_item_id: dict = {}
        for ev in events:
            if ev is HEADERS_MARK:
                sink(StreamEvent("headers"))
                continue
            if isinstance(ev, tuple) and ev and ev[0] == JSON_MARK:
                return self._from_json(ev[1], sink)
            etype = getattr(ev, "type", None) or (ev.get("type") if isinstance(ev, dict) else None)
            if etype == "response.output_text.delta":
                delta = getattr(ev, "delta", "") or ""
                if delta:
                    sink(StreamEvent("text", delta=delta))
            elif etype in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
                delta = getattr(ev, "delta", "") or ""
                if delta:
                    sink(StreamEvent("reasoning", delta=delta))
            elif etype == "response.output_item.added":
                item = as_dict(getattr(ev, "item", None)) or {}
                rec = {"item": item, "args": "", "index": getattr(ev, "output_index", len(added))}
                added[rec["index"]] = rec
                if item.get("id"):
                    by_item_id[item["id"]] = rec
                if item.get("type") == "function_call":
                    sink(StreamEvent("tool_call_start", call_id=item.get("call_id") or "", name=item.get("name") or ""))
            elif etype == "response.function_call_arguments.delta":
                rec = by_item_id.get(getattr(ev, "item_id", None)) or added.get(getattr(ev, "output_index", None))
                delta = getattr(ev, "delta", "") or ""
                if rec is not None:
                    rec["args"] += delta
                    it = rec["item"]
                    sink(StreamEvent("tool_args", delta=delta, call_id=it.get("call_id") or "", name=it.get("name") or ""))
            elif etype == "response.function_call_arguments.done":
                rec = by_item_id.get(getattr(ev, "item_id", None)) or added.get(getattr(ev, "output_index", None))
                if rec is not None and getattr(ev, "arguments", None):
                    rec["args"] = ev.arguments
            elif etype == "response.output_item.done":
                item = as_dict(getattr(ev, "item", None)) or {}
                idx = getattr(ev, "output_index", None)
                rec = by_item_id.get(item.get("id")) or added.get(idx)
                if item.get("type") == "function_call" and rec is not None:
                    prev = rec["item"]
                    item.setdefault("name", None)
                    item["name"] = item.get("name") or prev.get("name") or ""
                    item["call_id"] = item.get("call_id") or prev.get("call_id") or ""
                    item["arguments"] = item.get("arguments") or rec["args"] or "{}"
                canon = canonical_item(item)
                if canon is not None:
                    done.append((idx if idx is not None else len(done), canon))
            elif etype in ("response.completed", "response.incomplete"):
                resp = as_dict(getattr(ev, "response", None)) or {}
                items = [it for _, it in sorted(done, key=lambda p: p[0])]
                if not items:
                    items = [c for c in (canonical_item(i) for i in resp.get("output") or [] if isinstance(i, dict))
                             if c is not None]
                finish = "completed"
                if etype == "response.incomplete":
                    details = resp.get("incomplete_details") or {}
                    finish = f"incomplete:{details.get('reason') or ''}".rstrip(":")
                return ModelResponse(items=items, usage=usage_from(resp.get("usage")), finish_reason=finish)
            elif etype == "response.failed":
                data = as_dict(ev)
                err = ((data.get("response") or {}).get("error") or {}) if isinstance(data, dict) else {}
                raise stream_error(json.dumps(data, ensure_ascii=False), err.get("code"), err.get("type"))
            elif etype == "error":
                data = as_dict(ev)
                data = data if isinstance(data, dict) else {}
                nested = data.get("error") if isinstance(data.get("error"), dict) else {}
                raise stream_error(json.dumps(data, ensure_ascii=False), data.get("code"), data.get("status"),
                                   nested.get("code"), nested.get("type"), nested.get("status"))
        raise ModelError(TRUNCATED_RESPONSES, retryable=True)

    def _from_json(self, body: dict, sink: Sink) -> ModelResponse:
        """A server that ignored ``stream:true`` and answered with the final Response object."""
        if isinstance(body.get("error"), dict) and body["error"]:
            err = body["error"]
            raise stream_error(err.get("message") or json.dumps(err), err.get("code"), err.get("type"))
        items = [c for c in (canonical_item(i) for i in body.get("output") or [] if isinstance(i, dict))
                 if c is not None]
        text = "".join(p.get("text", "") for it in items if it.get("type") == "message" for p in it["content"])
        if text:
            sink(StreamEvent("text", delta=text))
        if not items and body.get("object") != "response" and "output" not in body:
            raise ModelError(f"{self.label} returned an unexpected JSON body from {self.url}: "
                             f"{json.dumps(body)[:180]}...", retryable=False)
        return ModelResponse(items=items, usage=usage_from(body.get("usage")), finish_reason=body.get("status") or "completed")
