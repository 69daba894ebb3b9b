"""Retry policy and interrupts against the scripted server (real sockets, real waits)."""

from __future__ import annotations

import threading
import time

import pytest

from fakeserver import FakeModelServer
from jucode.llm import retry as retry_mod
from jucode.llm.anthropic import AnthropicProvider
from jucode.llm.base import Interrupted, ModelError, ModelRequest
from jucode.llm.chat import ChatProvider
from jucode.llm.errors import code_is_retryable, message_is_retryable, parse_retry_after
from jucode.llm.responses import ResponsesProvider
from jucode.llm.retry import backoff_ms, retry_attempts, stream_with_retry

REQ = ModelRequest(model="m", instructions="", input=[{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}])


@pytest.fixture(scope="module")
def server():
    s = FakeModelServer()
    yield s
    s.close()


def test_backoff_policy():
    assert backoff_ms(1, rng=lambda: 0.0) == 900
    assert backoff_ms(1, rng=lambda: 0.999999) == 1099
    assert backoff_ms(2, rng=lambda: 0.5) == 2000
    assert backoff_ms(10, rng=lambda: 0.5) == 30000
    assert backoff_ms(1, retry_after=2.0, rng=lambda: 0.5) == 2000
    assert backoff_ms(3, retry_after=2.0, rng=lambda: 0.5) == 4000      # longer of the two
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert code_is_retryable("overloaded_error") and code_is_retryable(503) and code_is_retryable("429")
    assert not code_is_retryable("invalid_request_error") and not code_is_retryable(400)
    assert message_is_retryable("connection reset by peer") and not message_is_retryable("bad key")


def test_retry_attempts_env(monkeypatch):
    monkeypatch.delenv("JUCODE_RETRY_ATTEMPTS", raising=False)
    assert retry_attempts(None) == 5 and retry_attempts(0) == 0
    monkeypatch.setenv("JUCODE_RETRY_ATTEMPTS", "2")
    assert retry_attempts(7) == 2


def test_500_then_success_calls_on_retry(server, monkeypatch):
    monkeypatch.delenv("JUCODE_RETRY_ATTEMPTS", raising=False)
    monkeypatch.setattr(retry_mod, "BASE_DELAY_MS", 20)
    server.script({"status": 500}, {"drop": True}, {"text": "fine"})
    seen, text = [], []
    resp = stream_with_retry(ChatProvider("k", server.base_url), REQ,
                             lambda e: text.append(e.delta) if e.kind == "text" else None,
                             threading.Event(), attempts=3, on_retry=lambda *a: seen.append(a))
    assert "".join(text) == "fine" and resp.items[0]["content"][0]["text"] == "fine"
    assert [(a[0], a[1]) for a in seen] == [(2, 4), (3, 4)]
    assert seen[0][2].startswith("LLM API returned HTTP 500: ")
    assert seen[1][2].startswith("io error: ")


def test_non_retryable_fails_at_once(server):
    server.script({"status": 400, "body": {"error": {"message": "nope"}}})
    seen = []
    with pytest.raises(ModelError) as ei:
        stream_with_retry(ResponsesProvider("k", server.base_url), REQ, lambda e: None, threading.Event(),
                          attempts=5, on_retry=lambda *a: seen.append(a))
    assert ei.value.status == 400 and seen == []


def test_429_retry_after_two_seconds(server):
    server.script({"status": 429, "headers": {"retry-after": "2"}}, {"text": "ok"})
    seen = []
    t0 = time.monotonic()
    stream_with_retry(ResponsesProvider("k", server.base_url), REQ, lambda e: None, threading.Event(),
                      attempts=1, on_retry=lambda *a: seen.append(a))
    elapsed = time.monotonic() - t0
    assert 1.9 <= elapsed < 4.0
    assert seen[0][0] == 2 and seen[0][1] == 2 and 2000 <= seen[0][3] <= 2200


def test_retry_after_over_60_fails_fast(server):
    server.script({"status": 429, "headers": {"retry-after": "120"}})
    t0 = time.monotonic()
    with pytest.raises(ModelError) as ei:
        stream_with_retry(ChatProvider("k", server.base_url), REQ, lambda e: None, threading.Event(), attempts=5)
    assert time.monotonic() - t0 < 1.0 and not ei.value.retryable


def test_interrupt_during_backoff(server):
    server.script({"status": 503, "headers": {"retry-after": "30"}})
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    t0 = time.monotonic()
    with pytest.raises(Interrupted):
        stream_with_retry(ResponsesProvider("k", server.base_url), REQ, lambda e: None, cancel, attempts=2)
    assert time.monotonic() - t0 < 1.0


@pytest.mark.parametrize("cls", [ResponsesProvider, ChatProvider, AnthropicProvider])
def test_interrupt_latency_under_half_second(server, cls):
    server.script({"text": "abcdefgh", "chunk": 2, "stall": 10})
    cancel = threading.Event()
    started = threading.Event()
    box = {}

    def worker():
        try:
            stream_with_retry(cls("k", server.base_url), REQ,
                              lambda e: started.set() if e.kind == "text" else None, cancel, attempts=0)
        except Interrupted:
            box["done"] = time.monotonic()

    th = threading.Thread(target=worker, daemon=True)
    th.start()
    assert started.wait(10)
    t_set = time.monotonic()
    cancel.set()
    th.join(5)
    assert "done" in box and box["done"] - t_set < 0.5
