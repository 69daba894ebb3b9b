"""The one vocabulary everything above ``jucode/llm`` sees.

Conversation items are stored in one canonical (Responses-style) shape:

* ``{"role": "user", "content": [{"type": "input_text", "text"} | {"type": "input_image", "image_url"}]}``
* ``{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text"}]}``
* ``{"type": "function_call", "call_id", "name", "arguments"}``
* ``{"type": "function_call_output", "call_id", "output"}``
* ``{"type": "reasoning", "summary": [...], "encrypted_content"?}`` (Responses)
* ``{"type": "thinking", "thinking", "signature"}`` / ``{"type": "redacted_thinking", "data"}`` (Anthropic)

Each wire module converts at its boundary. A provider's ``stream(request, sink, cancel)``
calls ``sink`` with :class:`StreamEvent` values as bytes arrive and returns a
:class:`ModelResponse` only when the stream completed; failures raise :class:`ModelError`.
Items and usage are returned (buffered), never streamed, so a retried attempt cannot
duplicate them.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable, Optional


@dataclass
class Usage:
    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0

    def add(self, other: "Usage") -> None:
        self.input_tokens += other.input_tokens
        self.cached_input_tokens += other.cached_input_tokens
        self.output_tokens += other.output_tokens
        self.reasoning_tokens += other.reasoning_tokens

    def as_event_fields(self) -> dict:
        return {"input_tokens": self.input_tokens, "cached_input_tokens": self.cached_input_tokens,
                "output_tokens": self.output_tokens, "reasoning_tokens": self.reasoning_tokens}


@dataclass
class StreamEvent:
    """kind: "headers" (response began), "text", "reasoning", "tool_call_start" (call_id, name),
    "tool_args" (call_id, name, delta: streamed argument text)."""

    kind: str
    delta: str = ""
    call_id: str = ""
    name: str = ""


@dataclass
class ModelRequest:
    model: str
    instructions: str                      # system prompt
    input: list                            # canonical items
    tools: list = field(default_factory=list)   # Responses-style function definitions
    reasoning_effort: str = ""             # "" or "none" = omit
    max_output_tokens: int = 0             # 0 = unknown
    session_id: str = ""                   # prompt_cache_key + session headers
    read_timeout: float = 300.0
    connect_timeout: float = 30.0


@dataclass
class ModelResponse:
    items: list                            # canonical output items, in order
    usage: Usage = field(default_factory=Usage)
    finish_reason: str = ""


class ModelError(Exception):
    """A failed model request. ``retryable`` follows upstream's policy; ``retry_after`` in seconds."""

    def __init__(self, message: str, retryable: bool = False, retry_after: Optional[float] = None,
                 status: Optional[int] = None):
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status


class Interrupted(Exception):
    """The turn's interrupt flag was set while a request was in flight."""


Sink = Callable[[StreamEvent], None]


class Provider:
    """Base class for wire APIs. Subclasses implement :meth:`stream`."""

    name = "base"

    def stream(self, request: ModelRequest, sink: Sink, cancel: threading.Event) -> ModelResponse:
        raise NotImplementedError

    def close(self) -> None:
        pass
