"""OpenAI-compatible Chat Completions (OpenAI, vLLM, llama.cpp, DeepSeek, OpenRouter, Ollama…).

Why stitch tool calls ourselves: servers differ in what each delta repeats. llama.cpp repeats
``id`` and ``function.name`` in every delta, which makes naive concatenation (and the SDK's own
``chat.completions.stream()`` helper) produce ``read_fileread_file…``. We key calls by
``index``, take ``id``/``name`` once, and concatenate only ``arguments``. A stream that ends
without ``finish_reason`` is a truncation and retryable; usage may be absent entirely.
"""

from __future__ import annotations

import json
import threading
from typing import Optional

from jucode.llm.base import ModelError, ModelRequest, ModelResponse, Provider, Sink, StreamEvent, Usage
from jucode.llm.errors import TRUNCATED_CHAT, stream_error
from jucode.llm.openai_common import (HEADERS_MARK, JSON_MARK, as_dict, int_field, make_client,
                                      open_sdk_stream, session_headers, timeout_for)
from jucode.llm.pump import StreamHandle, pumped


def _text_of(content) -> str:
    if isinstance(content, str):
        return content
    out = []
    for p in content or []:
        if isinstance(p, dict) and p.get("type") in ("input_text", "output_text", "text"):
            out.append(p.get("text") or "")
    return "".join(out)


def _user_content(content):
    """String when text-only (widest server support), else parts with ``image_url``."""
    if isinstance(content, str):
        return content
    parts = []
    has_image = False
    for p in content or []:
        if not isinstance(p, dict):
            continue
        if p.get("type") in ("input_text", "text", "output_text"):
            parts.append({"type": "text", "text": p.get("text") or ""})
        elif p.get("type") == "input_image":
            url = p.get("image_url")
            url = url.get("url") if isinstance(url, dict) else url
            if url:
                parts.append({"type": "image_url", "image_url": {"url": url}})
                has_image = True
    if not has_image:
        return "".join(p["text"] for p in parts)
    return parts


def to_messages(instructions: str, items: list) -> list:
    """Canonical items → Chat messages (§4.4): consecutive calls share one assistant message."""
    msgs: list = []
    if instructions:
        msgs.append({"role": "system", "content": instructions})
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        role = item.get("role")
        if kind == "function_call":
            call = {"id": item.get("call_id") or "", "type": "function",
                    "function": {"name": item.get("name") or "", "arguments": item.get("arguments") or "{}"}}
            last = msgs[-1] if msgs else None
            if last is not None and last.get("role") == "assistant" and "tool_calls" in last:
                last["tool_calls"].append(call)
            elif last is not None and last.get("role") == "assistant":
                last["tool_calls"] = [call]     # text then calls: one assistant turn
            else:
                # "" rather than null: llama.cpp rejects null content next to tool_calls.
                msgs.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif kind == "function_call_output":
            out = item.get("output")
            if not isinstance(out, str):
                out = _text_of(out) if isinstance(out, list) else json.dumps(out)
            msgs.append({"role": "tool", "tool_call_id": item.get("call_id") or "", "content": out})
        elif kind in ("reasoning", "thinking", "redacted_thinking"):
            continue
        elif kind == "message" and role == "assistant" or (kind is None and role == "assistant"):
            msgs.append({"role": "assistant", "content": _text_of(item.get("content"))})
        elif role in ("user", "system", "developer"):
            r = "user" if role == "user" else "system"
            msgs.append({"role": r, "content": _user_content(item.get("content"))})
    return msgs


def to_chat_tools(tools: list) -> list:
    out = []
    for t in tools or []:
        if not isinstance(t, dict):
            continue
        if t.get("type") == "function" and "function" in t:
            out.append(t)
            continue
        fn = {"name": t.get("name") or "", "parameters": t.get("parameters") or {"type": "object", "properties": {}}}
        if t.get("description"):
            fn["description"] = t["description"]
        out.append({"type": "function", "function": fn})
    return out


def usage_from(u: Optional[dict]) -> Usage:
    if not isinstance(u, dict):
        return Usage()
    return Usage(input_tokens=int_field(u, "prompt_tokens"),
                 cached_input_tokens=int_field(u, "prompt_tokens_details", "cached_tokens"),
                 output_tokens=int_field(u, "completion_tokens"),
                 reasoning_tokens=int_field(u, "completion_tokens_details", "reasoning_tokens"))


def _finish_items(text: str, calls: dict, finish: str) -> list:
    items = []
    if text:
        items.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})
    for idx in sorted(calls):
        c = calls[idx]
        args = c["args"].strip() or "{}"
        try:
            json.loads(args)
        except ValueError:
            raise ModelError(f"tool call '{c['name']}' arguments are not valid JSON (finish_reason: {finish}); "
                             f"dropping truncated tool call", retryable=False)
        items.append({"type": "function_call", "call_id": c["id"] or f"call_{idx}", "name": c["name"],
                      "arguments": args})
    return items


class ChatProvider(Provider):
    name = "chat"
    label = "Chat Completions API"

    def __init__(self, api_key: Optional[str], base_url: str, extra_headers: Optional[dict] = None):
        self.api_key = api_key
        self.base_url = (base_url or "https://api.openai.com/v1").rstrip("/")
        self.extra_headers = dict(extra_headers or {})
        self._client = None
        self._client_lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def client(self):
        with self._client_lock:
            if self._client is None:
                self._client = make_client(self.api_key, self.base_url, self.extra_headers)
            return self._client

    def build_body(self, request: ModelRequest) -> dict:
        body: dict = {"model": request.model, "messages": to_messages(request.instructions, request.input)}
        if request.max_output_tokens:
            body["max_tokens"] = max(1, int(request.max_output_tokens))
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        if request.tools:
            body["tools"] = to_chat_tools(request.tools)
            body["tool_choice"] = "auto"
        effort = (request.reasoning_effort or "").strip()
        if effort and effort != "none":
            body["reasoning_effort"] = effort
        return body

    def stream(self, request: ModelRequest, sink: Sink, cancel: threading.Event) -> ModelResponse:
        body = self.build_body(request)
        model = body.pop("model")
        messages = body.pop("messages")
        body.pop("stream")
        kwargs = {"model": model, "messages": messages, "stream": True, "extra_body": body,
                  "extra_headers": session_headers(request.session_id), "timeout": timeout_for(request)}
        create = self.client().chat.completions.with_raw_response.create
        handle = StreamHandle()     # per request: providers are shared by concurrent turns
        events = pumped(lambda h: open_sdk_stream(create, kwargs, h, self.label, self.url), cancel, handle)
        return self._consume(events, sink)

    def _consume(self, events, sink: Sink) -> ModelResponse:
        text: list = []
        calls: dict = {}
        finish: Optional[str] = None
        usage = Usage()
        for ev in events:
            if ev is HEADERS_MARK:
                sink(StreamEvent("headers"))
                continue
            if isinstance(ev, tuple) and ev and ev[0] == JSON_MARK:
                return self._from_json(ev[1], sink)
            chunk = as_dict(ev)
            if not isinstance(chunk, dict):
                continue
            err = chunk.get("error")
            if err:
                err = err if isinstance(err, dict) else {"message": str(err)}
                raise stream_error(err.get("message") or json.dumps(err), err.get("code"), err.get("type"),
                                   err.get("status"))
            if isinstance(chunk.get("usage"), dict):
                usage = usage_from(chunk["usage"])
            choices = chunk.get("choices") or []
            if not choices:
                continue
            choice = choices[0] or {}
            delta = choice.get("delta") or {}
            content = delta.get("content")
            if content:
                text.append(content)
                sink(StreamEvent("text", delta=content))
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                sink(StreamEvent("reasoning", delta=reasoning))
            for tc in delta.get("tool_calls") or []:
                if not isinstance(tc, dict):
                    continue
                idx = tc.get("index")
                if idx is None:
                    idx = len(calls) - 1 if calls and not tc.get("id") else len(calls)
                rec = calls.get(idx)
                if rec is None:
                    rec = calls[idx] = {"id": "", "name": "", "args": "", "started": False}
                fn = tc.get("function") or {}
                if tc.get("id") and not rec["id"]:
                    rec["id"] = tc["id"]
                if fn.get("name") and not rec["name"]:
                    rec["name"] = fn["name"]
                if rec["name"] and not rec["started"]:
                    rec["started"] = True
                    sink(StreamEvent("tool_call_start", call_id=rec["id"], name=rec["name"]))
                piece = fn.get("arguments")
                if piece:
                    rec["args"] += piece
                    sink(StreamEvent("tool_args", delta=piece, call_id=rec["id"], name=rec["name"]))
            if choice.get("finish_reason"):
                finish = choice["finish_reason"]
        if finish is None:
            raise ModelError(TRUNCATED_CHAT, retryable=True)
        return ModelResponse(items=_finish_items("".join(text), calls, finish), usage=usage, finish_reason=finish)

    def _from_json(self, body: dict, sink: Sink) -> ModelResponse:
        """A server that ignored ``stream:true`` and returned a whole ``chat.completion``."""
        if body.get("error"):
            err = body["error"] if isinstance(body["error"], dict) else {"message": str(body["error"])}
            raise stream_error(err.get("message") or json.dumps(err), err.get("code"), err.get("type"))
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices:
            raise ModelError(f"{self.label} returned an unexpected JSON body from {self.url}: "
                             f"{json.dumps(body)[:180]}...", retryable=False)
        choice = choices[0] or {}
        msg = choice.get("message") or {}
        reasoning = msg.get("reasoning_content") or msg.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            sink(StreamEvent("reasoning", delta=reasoning))
        text = msg.get("content") or ""
        if isinstance(text, list):
            text = _text_of(text)
        if text:
            sink(StreamEvent("text", delta=text))
        calls = {}
        for i, tc in enumerate(msg.get("tool_calls") or []):
            fn = tc.get("function") or {}
            calls[i] = {"id": tc.get("id") or "", "name": fn.get("name") or "", "args": fn.get("arguments") or ""}
        finish = choice.get("finish_reason") or "stop"
        return ModelResponse(items=_finish_items(text, calls, finish), usage=usage_from(body.get("usage")),
                             finish_reason=finish)
