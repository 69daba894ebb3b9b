"""Anthropic Messages API streamed with ``requests`` and our own SSE parser.

Why not an SDK: the ``anthropic`` package is not a permitted runtime dependency, and the wire
format is small. Thinking blocks are kept with their signatures and replayed on later requests
(Anthropic rejects tool-use continuations that drop them while thinking is on). Usage is
normalised to the OpenAI subset: input includes cache reads and writes, cached = cache reads.
"""

from __future__ import annotations

import json
import threading
from typing import Iterator, Optional

from jucode.llm.base import ModelError, ModelRequest, ModelResponse, Provider, Sink, StreamEvent, Usage
from jucode.llm.errors import TRUNCATED_ANTHROPIC, http_error, non_sse_error, stream_error, transport_error
from jucode.llm.pump import StreamHandle, pumped
from jucode.llm.sse import iter_sse

OFFICIAL_HOST = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192          # used only when the model's max output is unknown (0)
THINKING_BUDGET = {"low": 4000, "medium": 10000, "high": 20000, "xhigh": 32000, "max": 64000}
_HEADERS_MARK = object()
_JSON_MARK = "__json_body__"


def messages_url(base_url: str) -> str:
    """§4.1: ``…/v1`` → ``/messages``; ``…/anthropic`` or the official host → ``/v1/messages``;
    anything else → ``/anthropic/v1/messages`` (gateways that mount Anthropic under a prefix)."""
    base = (base_url or OFFICIAL_HOST).rstrip("/")
    if base.endswith("/v1"):
        return f"{base}/messages"
    if base.endswith("/anthropic") or base == OFFICIAL_HOST:
        return f"{base}/v1/messages"
    return f"{base}/anthropic/v1/messages"


def thinking_budget(effort: str, max_tokens: int) -> int:
    budget = THINKING_BUDGET.get((effort or "").strip().lower(), 0)
    if not budget:
        return 0
    return min(budget, max(max_tokens - 1024, 1024))


def _image_block(url: str) -> Optional[dict]:
    if not url:
        return None
    if url.startswith("data:") and ";base64," in url:
        head, data = url.split(",", 1)
        media = head[5:].split(";", 1)[0] or "image/png"
        return {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _user_blocks(content) -> list:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks = []
    for p in content or []:
        if not isinstance(p, dict):
            continue
        if p.get("type") in ("input_text", "text", "output_text"):
            if p.get("text"):
                blocks.append({"type": "text", "text": p["text"]})
        elif p.get("type") == "input_image":
            url = p.get("image_url")
            url = url.get("url") if isinstance(url, dict) else url
            b = _image_block(url or "")
            if b:
                blocks.append(b)
    return blocks


def to_messages(items: list, thinking: bool) -> list:
    """Canonical items → Anthropic ``messages`` with same-role neighbours merged (§4.4)."""
    skipped: set = set()
    seq: list = []          # (role, block)
    for item in items:
        if not isinstance(item, dict):
            continue
        kind, role = item.get("type"), item.get("role")
        if kind == "function_call":
            try:
                args = json.loads(item.get("arguments") or "{}")
            except ValueError:
                skipped.add(item.get("call_id"))
                continue
            if not isinstance(args, dict):
                args = {"value": args}
            seq.append(("assistant", {"type": "tool_use", "id": item.get("call_id") or "",
                                      "name": item.get("name") or "", "input": args}))
        elif kind == "function_call_output":
            if item.get("call_id") in skipped:
                continue
            out = item.get("output")
            if not isinstance(out, str):
                out = json.dumps(out, ensure_ascii=False)
            block = {"type": "tool_result", "tool_use_id": item.get("call_id") or "", "content": out}
            if item.get("is_error"):
                block["is_error"] = True
            seq.append(("user", block))
        elif kind == "thinking":
            if thinking and item.get("signature"):
                seq.append(("assistant", {"type": "thinking", "thinking": item.get("thinking") or "",
                                          "signature": item["signature"]}))
        elif kind == "redacted_thinking":
            if thinking and item.get("data"):
                seq.append(("assistant", {"type": "redacted_thinking", "data": item["data"]}))
        elif kind == "reasoning":
            continue
        elif role == "assistant":
            for b in _user_blocks(item.get("content")):
                if b["type"] == "text":
                    seq.append(("assistant", b))
        elif role in ("user", "system", "developer"):
            for b in _user_blocks(item.get("content")):
                seq.append(("user", b))
    msgs: list = []
    for role, block in seq:
        if msgs and msgs[-1]["role"] == role:
            msgs[-1]["content"].append(block)
        else:
            msgs.append({"role": role, "content": [block]})
    return msgs


def to_tools(tools: list) -> list:
    out = []
    for t in tools or []:
        if not isinstance(t, dict):
            continue
        fn = t.get("function") if t.get("type") == "function" and isinstance(t.get("function"), dict) else t
        entry = {"name": fn.get("name") or "",
                 "input_schema": fn.get("parameters") or {"type": "object", "properties": {}}}
        if fn.get("description"):
            entry["description"] = fn["description"]
        out.append(entry)
    return out


def usage_from(u: Optional[dict]) -> Usage:
    u = u or {}

    def n(k):
        try:
            return int(u.get(k) or 0)
        except (TypeError, ValueError):
            return 0

    read, write = n("cache_read_input_tokens"), n("cache_creation_input_tokens")
    return Usage(input_tokens=n("input_tokens") + read + write, cached_input_tokens=read,
                 output_tokens=n("output_tokens"), reasoning_tokens=0)


class AnthropicProvider(Provider):
    name = "anthropic"
    label = "Anthropic Messages API"

    def __init__(self, api_key: Optional[str], base_url: str, extra_headers: Optional[dict] = None):
        self.api_key = api_key
        self.base_url = (base_url or OFFICIAL_HOST).rstrip("/")
        self.extra_headers = dict(extra_headers or {})

    @property
    def url(self) -> str:
        return messages_url(self.base_url)

    def headers(self, session_id: str) -> dict:
        h = {"Content-Type": "application/json", "Accept": "text/event-stream",
             "anthropic-version": ANTHROPIC_VERSION}
        if self.base_url == OFFICIAL_HOST or self.base_url.startswith(OFFICIAL_HOST + "/"):
            h["x-api-key"] = self.api_key or ""
        elif self.api_key:
            h["Authorization"] = f"Bearer {self.api_key}"
        if session_id:
            h.update({"session-id": session_id, "thread-id": session_id, "x-client-request-id": session_id})
        h.update(self.extra_headers)
        return h

    def build_body(self, request: ModelRequest) -> dict:
        max_tokens = max(1, int(request.max_output_tokens or DEFAULT_MAX_TOKENS))
        budget = thinking_budget(request.reasoning_effort, max_tokens)
        body: dict = {"model": request.model}
        if request.instructions:
            body["system"] = request.instructions
        body["max_tokens"] = max_tokens
        body["messages"] = to_messages(request.input, thinking=bool(budget))
        if request.tools:
            body["tools"] = to_tools(request.tools)
            body["tool_choice"] = {"type": "auto"}
        body["stream"] = True
        if budget:
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        return body

    # -- transport ---------------------------------------------------------------------------------
    def _open(self, request: ModelRequest, body: dict, handle: StreamHandle) -> Iterator:
        import requests  # lazy

        session = requests.Session()
        handle.add(session.close)
        url = self.url
        try:
            resp = session.post(url, data=json.dumps(body, ensure_ascii=False).encode("utf-8"),
                                headers=self.headers(request.session_id), stream=True,
                                timeout=(request.connect_timeout or 30.0, request.read_timeout or 300.0))
            handle.add(resp.close)
            if resp.status_code >= 400:
                raise http_error(resp.status_code, resp.text, resp.headers)
            ctype = (resp.headers.get("content-type") or "").lower()
            if "event-stream" in ctype or not ctype:
                yield _HEADERS_MARK
                yield from iter_sse(resp.iter_content(chunk_size=None))
                return
            data = resp.content
            if "json" in ctype:
                try:
                    parsed = json.loads(data)
                except ValueError:
                    raise non_sse_error(self.label, url, ctype, data.decode("utf-8", "replace"))
                yield _HEADERS_MARK
                yield (_JSON_MARK, parsed)
                return
            raise non_sse_error(self.label, url, ctype, data.decode("utf-8", "replace"))
        except ModelError:
            raise
        except Exception as exc:
            if handle.closed:
                return
            if isinstance(exc, (requests.RequestException, OSError)):
                raise transport_error(exc) from exc
            raise

    def stream(self, request: ModelRequest, sink: Sink, cancel: threading.Event) -> ModelResponse:
        body = self.build_body(request)
        handle = StreamHandle()     # per request: providers are shared by concurrent turns
        return self._consume(pumped(lambda h: self._open(request, body, h), cancel, handle), sink)

    # -- parsing -----------------------------------------------------------------------------------
    def _consume(self, events, sink: Sink) -> ModelResponse:
        blocks: dict = {}
        finished: list = []
        usage_raw: dict = {}
        stop_reason = ""
        for ev in events:
            if ev is _HEADERS_MARK:
                sink(StreamEvent("headers"))
                continue
            if isinstance(ev, tuple) and ev and ev[0] == _JSON_MARK:
                return self._from_json(ev[1], sink)
            _name, data = ev
            if data.strip() == "[DONE]":
                break
            try:
                msg = json.loads(data)
            except ValueError:
                continue
            if not isinstance(msg, dict):
                continue
            t = msg.get("type")
            if t == "message_start":
                usage_raw.update((msg.get("message") or {}).get("usage") or {})
            elif t == "content_block_start":
                cb = dict(msg.get("content_block") or {})
                rec = {"block": cb, "text": "", "thinking": "", "signature": cb.get("signature") or "", "json": ""}
                blocks[msg.get("index", len(blocks))] = rec
                if cb.get("type") == "tool_use":
                    sink(StreamEvent("tool_call_start", call_id=cb.get("id") or "", name=cb.get("name") or ""))
                elif cb.get("type") == "text" and cb.get("text"):
                    rec["text"] = cb["text"]
                    sink(StreamEvent("text", delta=cb["text"]))
                elif cb.get("type") == "thinking" and cb.get("thinking"):
                    rec["thinking"] = cb["thinking"]
                    sink(StreamEvent("reasoning", delta=cb["thinking"]))
            elif t == "content_block_delta":
                rec = blocks.get(msg.get("index"))
                d = msg.get("delta") or {}
                dt = d.get("type")
                if rec is None:
                    continue
                if dt == "text_delta" and d.get("text"):
                    rec["text"] += d["text"]
                    sink(StreamEvent("text", delta=d["text"]))
                elif dt == "thinking_delta" and d.get("thinking"):
                    rec["thinking"] += d["thinking"]
                    sink(StreamEvent("reasoning", delta=d["thinking"]))
                elif dt == "signature_delta":
                    rec["signature"] += d.get("signature") or ""
                elif dt == "input_json_delta":
                    piece = d.get("partial_json") or ""
                    rec["json"] += piece
                    if piece:
                        cb = rec["block"]
                        sink(StreamEvent("tool_args", delta=piece, call_id=cb.get("id") or "", name=cb.get("name") or ""))
            elif t == "content_block_stop":
                rec = blocks.pop(msg.get("index"), None)
                if rec is not None:
                    finished.append(rec)
            elif t == "message_delta":
                stop_reason = (msg.get("delta") or {}).get("stop_reason") or stop_reason
                for k, v in (msg.get("usage") or {}).items():
                    if v is not None:
                        usage_raw[k] = v
            elif t == "message_stop":
                finished.extend(blocks.values())
                return ModelResponse(items=self._items(finished, stop_reason), usage=usage_from(usage_raw),
                                     finish_reason=stop_reason)
            elif t == "error":
                err = msg.get("error") if isinstance(msg.get("error"), dict) else {}
                raise stream_error(json.dumps(msg, ensure_ascii=False), err.get("type"), err.get("code"))
        raise ModelError(TRUNCATED_ANTHROPIC, retryable=True)

    @staticmethod
    def _items(recs: list, stop_reason: str) -> list:
        items = []
        for rec in recs:
            cb = rec["block"]
            kind = cb.get("type")
            if kind == "text":
                if rec["text"]:
                    items.append({"type": "message", "role": "assistant",
                                  "content": [{"type": "output_text", "text": rec["text"]}]})
            elif kind == "thinking":
                if rec["signature"]:
                    items.append({"type": "thinking", "thinking": rec["thinking"], "signature": rec["signature"]})
            elif kind == "redacted_thinking":
                if cb.get("data"):
                    items.append({"type": "redacted_thinking", "data": cb["data"]})
            elif kind in ("tool_use", "server_tool_use"):
                args = rec["json"].strip()
                if not args:
                    args = json.dumps(cb.get("input")) if cb.get("input") else "{}"
                try:
                    json.loads(args)
                except ValueError:
                    raise ModelError(f"tool_use '{cb.get('name') or ''}' arguments are not valid JSON "
                                     f"(stop_reason: {stop_reason}); dropping truncated tool call", retryable=False)
                items.append({"type": "function_call", "call_id": cb.get("id") or "", "name": cb.get("name") or "",
                              "arguments": args})
        return items

    def _from_json(self, body: dict, sink: Sink) -> ModelResponse:
        if body.get("type") == "error" or body.get("error"):
            err = body.get("error") if isinstance(body.get("error"), dict) else {}
            raise stream_error(err.get("message") or json.dumps(body), err.get("type"))
        if not isinstance(body.get("content"), list):
            raise ModelError(f"{self.label} returned an unexpected JSON body from {self.url}: "
                             f"{json.dumps(body)[:180]}...", retryable=False)
        recs = []
        for cb in body["content"]:
            if not isinstance(cb, dict):
                continue
            rec = {"block": cb, "text": cb.get("text") or "", "thinking": cb.get("thinking") or "",
                   "signature": cb.get("signature") or "", "json": ""}
            if rec["thinking"]:
                sink(StreamEvent("reasoning", delta=rec["thinking"]))
            if rec["text"]:
                sink(StreamEvent("text", delta=rec["text"]))
            recs.append(rec)
        stop = body.get("stop_reason") or "end_turn"
        return ModelResponse(items=self._items(recs, stop), usage=usage_from(body.get("usage")), finish_reason=stop)
