"""A provider that plays a scripted conversation instead of calling a model.

It exists for demos, front-end development and end-to-end tests that need realistic event
streams (reasoning, streamed text, tool calls with streamed arguments, retryable failures,
slow responses) without a network or API key.

Script format (JSON; a bare list is taken as ``{"responses": <list>}``)::

    {
      "pace_ms": 20,               # default pause between streamed chunks (0 = none)
      "chunk": 12,                 # default chunk size in characters for text/reasoning/args
      "fallback": {...},           # response used when the script is exhausted (optional)
      "responses": [ <response>, ... ]
    }

A response is a list of steps or an object::

    {"steps": [...],
     "match": "substring" | ["any", "of"],   # last user message contains one (any case)
     "regex": "pattern",                      # ... or match this regular expression
     "after": "user" | "tool",                # newest input item must be a user message / tool result
     "usage": {"input_tokens": 1200, "cached_input_tokens": 1024,
               "output_tokens": 80, "reasoning_tokens": 16},  # else estimated (chars / 4)

     "group": "name"}                         # using one response drops the rest of its group

Each model request takes the first unused response (in script order) whose conditions hold
and that no other request is playing; responses passed over stay available, so concurrent
requests (a subagent's, a compaction's) can pick theirs by condition. Alternatives for a
branch share a ``group``: when one is used the others are dropped. A response is used up only
when it completes; a failed or interrupted request leaves it in place for the retry.

Steps (one key names the kind; ``chunk`` / ``pace_ms`` override the defaults per step)::

    {"reasoning": "text"}                     # reasoning deltas + a reasoning item
    {"text": "text" | ["explicit", "chunks"]} # assistant deltas; consecutive ones form one message
                                              # ("repeat": N plays a text/reasoning N times)
    {"tool": "bash", "arguments": {...} | "raw json", "call_id": "call_7"}
                                              # tool_call_start + streamed tool_args + function_call
    {"delay_ms": 800}                         # a pause (interruptible)
    {"error": "message", "status": 429, "retryable": true, "retry_after": 1, "times": 1}
                                              # raise ModelError (the first ``times`` attempts only)

The ``headers`` event (``thinking_start``) is sent before the first content step, so a leading
delay reads as latency and a leading error arrives without it. Cancellation is checked between
chunks and during delays (``Interrupted``), at least every 50 ms.
"""

from __future__ import annotations

import json
import os
import re
import threading
from typing import Optional

from jucode.llm.base import (Interrupted, ModelError, ModelRequest, ModelResponse, Provider, Sink,
                             StreamEvent, Usage)

_DEFAULT_FALLBACK = {"steps": [{"text": "(The replay script has no more responses.)"}]}
_STEP_KINDS = ("reasoning", "text", "tool", "delay_ms", "error")


class ScriptError(ValueError):
    """The replay script is malformed."""


def _normalize_response(resp, where: str) -> dict:
    if isinstance(resp, list):
        resp = {"steps": resp}
    if not isinstance(resp, dict) or not isinstance(resp.get("steps", []), list):
        raise ScriptError(f"{where}: a response must be a list of steps or an object with steps")
    for i, step in enumerate(resp.get("steps", [])):
        if not isinstance(step, dict) or not any(k in step for k in _STEP_KINDS):
            raise ScriptError(f"{where} step {i}: expected one of {', '.join(_STEP_KINDS)}")
    if "regex" in resp:
        try:
            re.compile(resp["regex"])
        except re.error as exc:
            raise ScriptError(f"{where}: bad regex: {exc}") from None
    return resp


def load_script(script) -> dict:
    """Accept a path, a JSON string, a list of responses or a script dict; validate it."""
    if isinstance(script, str):
        if script.lstrip().startswith(("{", "[")):
            script = json.loads(script)
        else:
            with open(script, "r", encoding="utf-8") as fh:
                script = json.load(fh)
    if isinstance(script, list):
        script = {"responses": script}
    if not isinstance(script, dict) or not isinstance(script.get("responses"), list):
        raise ScriptError("a replay script needs a responses list")
    out = dict(script)
    out["responses"] = [_normalize_response(r, f"response {i}") for i, r in enumerate(script["responses"])]
    out["fallback"] = _normalize_response(script.get("fallback", _DEFAULT_FALLBACK), "fallback")
    return out


def _item_text(item: dict) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content
                       if isinstance(part, dict) and isinstance(part.get("text"), str))
    return ""


def last_user_text(items: list) -> str:
    for item in reversed(items or []):
        if isinstance(item, dict) and item.get("role") == "user" and item.get("type", "message") == "message":
            return _item_text(item)
    return ""


def _last_kind(items: list) -> str:
    for item in reversed(items or []):
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call_output":
            return "tool"
        if item.get("role") == "user":
            return "user"
        return "other"
    return "other"


def _chunks(text: str, size: int) -> list:
    size = max(1, int(size or 1))
    return [text[i:i + size] for i in range(0, len(text), size)] or []


def _pieces(step: dict, key: str, size) -> list:
    value = step[key]
    repeat = max(1, int(step.get("repeat", 1) or 1))
    if isinstance(value, list):
        return [str(v) for v in value] * repeat
    return _chunks(str(value) * repeat, size)


_SHARED: dict = {}
_SHARED_LOCK = threading.Lock()


class ReplayProvider(Provider):
    """Plays a replay script (see the module docstring). Thread-safe.

    The script's progress lives in the instance, so an engine that builds a provider per turn
    (or per subagent) must use :meth:`shared` to keep one conversation going.
    """

    name = "replay"

    def __init__(self, script):
        self.script = load_script(script)
        self.pace_ms = float(self.script.get("pace_ms", 0) or 0)
        self.chunk = int(self.script.get("chunk", 12) or 12)
        self._responses = self.script["responses"]
        self._state = ["free"] * len(self._responses)    # free | busy (being played) | used
        self._errors_fired: dict = {}    # (response index, step index) -> times raised
        self._call_counter = 0
        self._last_input_tokens = 0
        self._lock = threading.Lock()

    @classmethod
    def from_file(cls, path: str) -> "ReplayProvider":
        return cls(path)

    @classmethod
    def shared(cls, path: str) -> "ReplayProvider":
        """The one provider of this process for the script at ``path`` (created on first use)."""
        key = os.path.abspath(path) if not path.lstrip().startswith(("{", "[")) else path
        with _SHARED_LOCK:
            provider = _SHARED.get(key)
            if provider is None:
                provider = _SHARED[key] = cls(path)
            return provider

    @staticmethod
    def reset_shared() -> None:
        """Forget shared providers (tests; a `/new` session that should restart the script)."""
        with _SHARED_LOCK:
            _SHARED.clear()

    @property
    def remaining(self) -> int:
        """Responses not used up yet."""
        with self._lock:
            return sum(1 for st in self._state if st != "used")

    # -- selection

    def _matches(self, resp: dict, request: ModelRequest) -> bool:
        text = last_user_text(request.input)
        match = resp.get("match")
        if match is not None:
            options = [match] if isinstance(match, str) else list(match)
            low = text.lower()
            if not any(isinstance(o, str) and o.lower() in low for o in options):
                return False
        if "regex" in resp and not re.search(resp["regex"], text):
            return False
        after = resp.get("after")
        if after and _last_kind(request.input) != after:
            return False
        return True

    def _select(self, request: ModelRequest) -> tuple:
        """Returns (index, response), or (-1, fallback) when nothing is left that matches."""
        with self._lock:
            for i, resp in enumerate(self._responses):
                if self._state[i] == "free" and self._matches(resp, request):
                    self._state[i] = "busy"
                    return i, resp
            return -1, self.script["fallback"]

    def _finish(self, index: int, completed: bool) -> None:
        if index < 0:
            return
        with self._lock:
            if not completed:
                self._state[index] = "free"
                return
            self._state[index] = "used"
            group = self._responses[index].get("group")
            if group is not None:
                for k, other in enumerate(self._responses):
                    if other.get("group") == group and self._state[k] == "free":
                        self._state[k] = "used"

    # -- streaming

    def _wait(self, seconds: float, cancel: threading.Event) -> None:
        if seconds <= 0:
            if cancel.is_set():
                raise Interrupted()
            return
        if cancel.wait(seconds):
            raise Interrupted()

    def _stream_pieces(self, pieces: list, pace: float, cancel, emit) -> None:
        for n, piece in enumerate(pieces):
            if n:
                self._wait(pace, cancel)
            elif cancel.is_set():
                raise Interrupted()
            emit(piece)

    def stream(self, request: ModelRequest, sink: Sink, cancel: threading.Event) -> ModelResponse:
        index, resp = self._select(request)
        completed = False
        try:
            response = self._play(index, resp, request, sink, cancel)
            completed = True
            return response
        finally:
            self._finish(index, completed)

    def _play(self, index: int, resp: dict, request: ModelRequest, sink: Sink,
              cancel: threading.Event) -> ModelResponse:
        items: list = []
        headers_sent = False
        message_text: Optional[list] = None   # parts of the current message item
        out_chars = 0
        reasoning_chars = 0

        def headers():
            nonlocal headers_sent
            if not headers_sent:
                headers_sent = True
                sink(StreamEvent("headers"))

        def close_message():
            nonlocal message_text
            if message_text is not None:
                items.append({"type": "message", "role": "assistant",
                              "content": [{"type": "output_text", "text": "".join(message_text)}]})
                message_text = None

        for s_index, step in enumerate(resp.get("steps", [])):
            pace = float(step.get("pace_ms", self.pace_ms) or 0) / 1000.0
            size = step.get("chunk", self.chunk)
            if "error" in step:
                key = (index, s_index)
                with self._lock:
                    fired = self._errors_fired.get(key, 0)
                    if fired < int(step.get("times", 1)):
                        self._errors_fired[key] = fired + 1
                        raise_it = True
                    else:
                        raise_it = False
                if raise_it:
                    status = step.get("status")
                    raise ModelError(str(step["error"]), retryable=bool(step.get("retryable", False)),
                                     retry_after=step.get("retry_after"), status=status)
                continue
            if "delay_ms" in step and not any(k in step for k in ("text", "reasoning", "tool")):
                self._wait(float(step["delay_ms"]) / 1000.0, cancel)
                continue
            headers()
            if "reasoning" in step:
                close_message()
                pieces = _pieces(step, "reasoning", size)
                self._stream_pieces(pieces, pace, cancel, lambda p: sink(StreamEvent("reasoning", delta=p)))
                full = "".join(pieces)
                reasoning_chars += len(full)
                items.append({"type": "reasoning", "summary": [{"type": "summary_text", "text": full}]})
            elif "text" in step:
                pieces = _pieces(step, "text", size)
                if message_text is None:
                    message_text = []
                parts = message_text
                self._stream_pieces(pieces, pace, cancel,
                                    lambda p: (parts.append(p), sink(StreamEvent("text", delta=p))))
                out_chars += sum(len(p) for p in pieces)
            elif "tool" in step:
                close_message()
                name = str(step["tool"])
                args = step.get("arguments", {})
                raw = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
                call_id = step.get("call_id") or self._next_call_id()
                sink(StreamEvent("tool_call_start", call_id=call_id, name=name))
                pieces = _chunks(raw, size) if raw else []
                self._stream_pieces(pieces, pace, cancel,
                                    lambda p: sink(StreamEvent("tool_args", delta=p, call_id=call_id, name=name)))
                out_chars += len(raw)
                items.append({"type": "function_call", "call_id": call_id, "name": name, "arguments": raw})
        if cancel.is_set():
            raise Interrupted()
        headers()
        close_message()
        usage = self._usage(resp, request, out_chars, reasoning_chars)
        finish = "tool_calls" if any(i.get("type") == "function_call" for i in items) else "stop"
        return ModelResponse(items=items, usage=usage, finish_reason=finish)

    def _next_call_id(self) -> str:
        with self._lock:
            self._call_counter += 1
            return f"call_{self._call_counter}"

    def _usage(self, resp: dict, request: ModelRequest, out_chars: int, reasoning_chars: int) -> Usage:
        given = resp.get("usage")
        if isinstance(given, dict):
            return Usage(**{k: int(given.get(k, 0) or 0) for k in
                            ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens")})
        try:
            size = len(json.dumps(request.input, ensure_ascii=False)) + len(request.instructions or "")
            size += len(json.dumps(request.tools, ensure_ascii=False)) if request.tools else 0
        except (TypeError, ValueError):
            size = 0
        input_tokens = (size + 3) // 4
        with self._lock:
            # Prompt caching works in 64-token blocks of a shared prefix: the previous request.
            cached = (min(self._last_input_tokens, input_tokens) // 64) * 64
            self._last_input_tokens = input_tokens
        reasoning = (reasoning_chars + 3) // 4
        return Usage(input_tokens=input_tokens, cached_input_tokens=cached,
                     output_tokens=(out_chars + 3) // 4 + reasoning, reasoning_tokens=reasoning)
