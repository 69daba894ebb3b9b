"""Each wire API against the scripted server on 127.0.0.1: streaming, items, usage, request shape, quirks."""

from __future__ import annotations

import json
import threading

import pytest

from fakeserver import FakeModelServer
from jucode.llm.anthropic import AnthropicProvider, messages_url, thinking_budget
from jucode.llm.base import ModelError, ModelRequest
from jucode.llm.chat import ChatProvider
from jucode.llm.responses import ResponsesProvider

TOOLS = [{"type": "function", "name": "read", "description": "Read a file",
          "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}]
USER = {"role": "user", "content": [{"type": "input_text", "text": "hi"}]}
REPLY = {"reasoning": "Plan it.", "text": "Hello there!",
         "tool_calls": [{"name": "read", "arguments": {"path": "a.py"}, "call_id": "call_A"},
                        {"name": "read", "arguments": {"path": "b.py"}, "call_id": "call_B"}],
         "usage": {"input": 120, "cached": 64, "output": 30, "reasoning": 8}}


@pytest.fixture(scope="module")
def server():
    # One server per module: FakeModelServer.close() waits out the 0.5 s serve_forever poll.
    s = FakeModelServer()
    yield s
    s.close()


def run(provider, **kw):
    events = []
    req = ModelRequest(model=kw.pop("model", "m"), instructions=kw.pop("instructions", "be brief"),
                       input=kw.pop("input", [USER]), tools=kw.pop("tools", TOOLS), session_id="sess-1", **kw)
    resp = provider.stream(req, events.append, threading.Event())
    return resp, events


def kinds(events, kind):
    return "".join(e.delta for e in events if e.kind == kind)


def calls(resp):
    return [(i["call_id"], i["name"], json.loads(i["arguments"])) for i in resp.items if i["type"] == "function_call"]


def test_responses_stream_text_reasoning_and_parallel_calls(server):
    server.script(dict(REPLY))
    resp, events = run(ResponsesProvider("sk-test", server.base_url), reasoning_effort="high", max_output_tokens=500)
    assert events[0].kind == "headers"
    assert kinds(events, "text") == "Hello there!"
    assert kinds(events, "reasoning") == "Plan it."
    starts = [(e.call_id, e.name) for e in events if e.kind == "tool_call_start"]
    assert starts == [("call_A", "read"), ("call_B", "read")]
    assert calls(resp) == [("call_A", "read", {"path": "a.py"}), ("call_B", "read", {"path": "b.py"})]
    assert resp.items[0]["type"] == "reasoning" and resp.items[0]["encrypted_content"] == "enc-blob"
    assert resp.items[1] == {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hello there!"}]}
    u = resp.usage
    assert (u.input_tokens, u.cached_input_tokens, u.output_tokens, u.reasoning_tokens) == (120, 64, 30, 8)
    req = server.requests[-1]
    body, headers = req["body"], req["headers"]
    assert req["path"] == "/v1/responses"
    assert body["store"] is False and body["stream"] is True
    assert body["prompt_cache_key"] == "sess-1" and body["instructions"] == "be brief"
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["tool_choice"] == "auto" and body["parallel_tool_calls"] is True and body["tools"] == TOOLS
    assert body["max_output_tokens"] == 500
    assert headers["session-id"] == headers["thread-id"] == headers["x-client-request-id"] == "sess-1"
    assert headers["authorization"] == "Bearer sk-test"
    assert headers.get("x-stainless-retry-count") in (None, "0")


def test_responses_input_is_sanitized_and_effort_none_sent_without_summary(server):
    server.script({"text": "ok"})
    items = [USER, {"type": "thinking", "thinking": "x", "signature": "s"},
             {"type": "reasoning", "id": "rs_9", "summary": []},
             {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "read", "arguments": "{}"},
             {"type": "function_call_output", "call_id": "c1", "output": "data", "is_error": True}]
    run(ResponsesProvider("k", server.base_url), input=items, reasoning_effort="none", tools=[])
    body = server.requests[-1]["body"]
    assert body["reasoning"] == {"effort": "none"} and "tools" not in body
    assert body["input"] == [USER, {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"},
                             {"type": "function_call_output", "call_id": "c1", "output": "data"}]
    server.script({"text": "ok"})
    run(ResponsesProvider("k", server.base_url), input=[USER], reasoning_effort="", tools=[])
    assert "reasoning" not in server.requests[-1]["body"]          # a model without efforts


def test_azure_route_uses_api_key_header_and_api_version(server, monkeypatch):
    monkeypatch.delenv("AZURE_OPENAI_API_VERSION", raising=False)
    server.script({"text": "az"})
    resp, events = run(ResponsesProvider("az-key", server.base_url, protocol="azure"))
    req = server.requests[-1]
    assert req["path"] == "/v1/responses?api-version=v1"
    assert req["headers"]["api-key"] == "az-key"
    assert "authorization" not in req["headers"]
    assert kinds(events, "text") == "az"


def test_chat_stream_text_reasoning_and_parallel_calls(server):
    server.script(dict(REPLY))
    resp, events = run(ChatProvider("k", server.base_url), reasoning_effort="low", max_output_tokens=0)
    assert events[0].kind == "headers"
    assert kinds(events, "text") == "Hello there!"
    assert kinds(events, "reasoning") == "Plan it."
    assert calls(resp) == [("call_A", "read", {"path": "a.py"}), ("call_B", "read", {"path": "b.py"})]
    assert resp.finish_reason == "tool_calls"
    u = resp.usage
    assert (u.input_tokens, u.cached_input_tokens, u.output_tokens, u.reasoning_tokens) == (120, 64, 30, 8)
    body = server.requests[-1]["body"]
    assert server.requests[-1]["path"] == "/v1/chat/completions"
    assert body["messages"][0] == {"role": "system", "content": "be brief"}
    assert body["messages"][1] == {"role": "user", "content": "hi"}
    assert body["stream_options"] == {"include_usage": True}
    assert body["tools"][0] == {"type": "function", "function": {"name": "read", "description": "Read a file",
                                                                 "parameters": TOOLS[0]["parameters"]}}
    assert body["tool_choice"] == "auto" and body["reasoning_effort"] == "low"
    assert "max_tokens" not in body


def test_chat_message_conversion_merges_calls(server):
    server.script({"text": "ok"})
    items = [USER, {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "let me look"}]},
             {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{\"path\":\"a\"}"},
             {"type": "function_call", "call_id": "c2", "name": "read", "arguments": "{\"path\":\"b\"}"},
             {"type": "function_call_output", "call_id": "c1", "output": "A"},
             {"type": "function_call_output", "call_id": "c2", "output": "B"},
             {"type": "reasoning", "summary": [], "encrypted_content": "x"},
             {"role": "user", "content": [{"type": "input_text", "text": "see"},
                                          {"type": "input_image", "image_url": "data:image/png;base64,AAA"}]}]
    run(ChatProvider("k", server.base_url), input=items, instructions="")
    msgs = server.requests[-1]["body"]["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "tool", "user"]
    assert msgs[1]["content"] == "let me look" and [c["id"] for c in msgs[1]["tool_calls"]] == ["c1", "c2"]
    assert msgs[2] == {"role": "tool", "tool_call_id": "c1", "content": "A"}
    assert msgs[4]["content"][1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAA"}}


def test_chat_llamacpp_quirks_repeated_ids_no_usage_reasoning_field(server):
    server.script(dict(REPLY, repeat_ids=True, no_usage=True, reasoning_field="reasoning", chunk=2))
    resp, events = run(ChatProvider("k", server.base_url))
    assert calls(resp) == [("call_A", "read", {"path": "a.py"}), ("call_B", "read", {"path": "b.py"})]
    assert kinds(events, "reasoning") == "Plan it."
    assert resp.usage.input_tokens == 0 and resp.usage.output_tokens == 0
    args = "".join(e.delta for e in events if e.kind == "tool_args" and e.call_id == "call_A")
    assert json.loads(args) == {"path": "a.py"}


def test_chat_truncated_stream_is_retryable(server):
    server.script({"text": "abcdefgh", "truncate_after": 2})
    with pytest.raises(ModelError) as ei:
        run(ChatProvider("k", server.base_url))
    assert ei.value.retryable


def test_chat_missing_finish_reason_is_retryable(server):
    server.script({"raw": [(None, {"choices": [{"index": 0, "delta": {"content": "Hi"}}]}), (None, "[DONE]")]})
    with pytest.raises(ModelError) as ei:
        run(ChatProvider("k", server.base_url))
    assert ei.value.message == "stream closed before finish_reason" and ei.value.retryable


def test_chat_midstream_error_chunk(server):
    server.script({"raw": [(None, {"choices": [{"index": 0, "delta": {"content": "Par"}}]}),
                           (None, {"error": {"message": "boom", "type": "server_error", "code": None}})]})
    with pytest.raises(ModelError) as ei:
        run(ChatProvider("k", server.base_url))
    assert "boom" in ei.value.message and ei.value.retryable


def test_chat_bad_tool_json_not_retryable(server):
    server.script({"tool_calls": [{"name": "read", "arguments": "{\"path\": \"a"}]})
    with pytest.raises(ModelError) as ei:
        run(ChatProvider("k", server.base_url))
    assert ei.value.message.startswith("tool call 'read' arguments are not valid JSON (finish_reason: tool_calls)")
    assert not ei.value.retryable


def test_json_reply_instead_of_sse(server):
    server.script({"json": {"object": "response", "status": "completed",
                            "output": [{"type": "message", "content": [{"type": "output_text", "text": "plain"}]}],
                            "usage": {"input_tokens": 5, "output_tokens": 1}}})
    resp, events = run(ResponsesProvider("k", server.base_url))
    assert kinds(events, "text") == "plain" and resp.usage.input_tokens == 5
    server.script({"json": {"choices": [{"message": {"content": "cj", "tool_calls": [
        {"id": "c9", "function": {"name": "read", "arguments": "{}"}}]}, "finish_reason": "tool_calls"}]}})
    resp, events = run(ChatProvider("k", server.base_url))
    assert kinds(events, "text") == "cj" and calls(resp) == [("c9", "read", {})]


@pytest.mark.parametrize("cls", [ResponsesProvider, ChatProvider, AnthropicProvider])
def test_html_page_names_base_url(server, cls):
    server.script({"html": "<html><body>Welcome to nginx</body></html>"})
    with pytest.raises(ModelError) as ei:
        run(cls("k", server.base_url))
    msg = ei.value.message
    assert "returned non-JSON response from" in msg and server.base_url in msg
    assert "content-type: text/html" in msg and "<html><body>Welcome" in msg and not ei.value.retryable


@pytest.mark.parametrize("cls", [ResponsesProvider, ChatProvider, AnthropicProvider])
def test_http_errors(server, cls):
    server.script({"status": 401, "body": {"error": {"message": "bad key"}}})
    with pytest.raises(ModelError) as ei:
        run(cls("k", server.base_url))
    assert ei.value.message.startswith("LLM API returned HTTP 401: ") and "bad key" in ei.value.message
    assert not ei.value.retryable and ei.value.status == 401
    server.script({"status": 503, "body": {"error": {"message": "busy"}}, "headers": {"retry-after-ms": "1500"}})
    with pytest.raises(ModelError) as ei:
        run(cls("k", server.base_url))
    assert ei.value.retryable and ei.value.retry_after == 1.5


def test_responses_midstream_error_shapes(server):
    head = [("response.created", {"type": "response.created", "response": {"id": "r", "output": []}}),
            ("response.output_text.delta", {"type": "response.output_text.delta", "item_id": "m", "output_index": 0,
                                            "content_index": 0, "delta": "Par"})]
    flat = ("error", {"type": "error", "code": "server_error", "message": "The server had an error", "param": None})
    nested = ("error", {"type": "error", "error": {"type": "invalid_request_error", "code": "context_length_exceeded",
                                                    "message": "Input too long."}})
    failed = ("response.failed", {"type": "response.failed", "response": {"id": "r", "status": "failed",
                                                                          "error": {"code": "server_error", "message": "The model failed."}}})
    p = ResponsesProvider("k", server.base_url)
    for tail, retryable, text in ((flat, True, "The server had an error"), (nested, False, "Input too long."),
                                  (failed, True, "The model failed.")):
        server.script({"raw": head + [tail]})
        with pytest.raises(ModelError) as ei:
            run(p)
        assert ei.value.retryable is retryable and text in ei.value.message
    server.script({"text": "abcdefghijkl", "truncate_after": 4})
    with pytest.raises(ModelError) as ei:
        run(p)
    assert ei.value.retryable
    server.script({"raw": head})   # clean end of body without a terminal event
    with pytest.raises(ModelError) as ei:
        run(p)
    assert ei.value.message == "stream closed before response.completed" and ei.value.retryable


def test_anthropic_stream_thinking_text_calls_and_usage(server):
    base = server.base_url  # ends with /v1 -> {base}/messages
    server.script(dict(REPLY, usage={"input": 10, "cached": 100, "cache_write": 5, "output": 30}))
    p = AnthropicProvider("k", base)
    resp, events = run(p, reasoning_effort="medium", max_output_tokens=32000)
    assert server.requests[-1]["path"] == "/v1/messages"
    assert kinds(events, "text") == "Hello there!" and kinds(events, "reasoning") == "Plan it."
    assert resp.items[0] == {"type": "thinking", "thinking": "Plan it.", "signature": "sig-1"}
    assert calls(resp) == [("call_A", "read", {"path": "a.py"}), ("call_B", "read", {"path": "b.py"})]
    u = resp.usage
    assert (u.input_tokens, u.cached_input_tokens, u.output_tokens) == (115, 100, 30)
    req = server.requests[-1]
    body = req["body"]
    assert req["headers"]["anthropic-version"] == "2023-06-01" and req["headers"]["authorization"] == "Bearer k"
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 10000} and body["max_tokens"] == 32000
    assert body["system"] == "be brief" and body["tool_choice"] == {"type": "auto"}
    assert body["tools"][0] == {"name": "read", "input_schema": TOOLS[0]["parameters"], "description": "Read a file"}
    # Replay: thinking kept (thinking on), bad-args call and its result skipped, same-role merged.
    server.script({"text": "ok"})
    history = [USER] + resp.items + [
        {"type": "function_call", "call_id": "bad", "name": "read", "arguments": "{oops"},
        {"type": "function_call_output", "call_id": "call_A", "output": "A"},
        {"type": "function_call_output", "call_id": "call_B", "output": "B", "is_error": True},
        {"type": "function_call_output", "call_id": "bad", "output": "X"}]
    run(p, input=history, reasoning_effort="high", max_output_tokens=32000)
    msgs = server.requests[-1]["body"]["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    assert [b["type"] for b in msgs[1]["content"]] == ["thinking", "text", "tool_use", "tool_use"]
    assert msgs[1]["content"][0]["signature"] == "sig-1"
    assert msgs[2]["content"] == [{"type": "tool_result", "tool_use_id": "call_A", "content": "A"},
                                  {"type": "tool_result", "tool_use_id": "call_B", "content": "B", "is_error": True}]
    # Thinking off: thinking blocks are not replayed.
    server.script({"text": "ok"})
    run(p, input=history, reasoning_effort="none")
    body = server.requests[-1]["body"]
    assert "thinking" not in body
    assert [b["type"] for b in body["messages"][1]["content"]] == ["text", "tool_use", "tool_use"]


def test_anthropic_truncation_and_error_event(server):
    p = AnthropicProvider("k", server.base_url)
    server.script({"text": "abcdefgh", "truncate_after": 3})
    with pytest.raises(ModelError) as ei:
        run(p)
    assert ei.value.retryable
    server.script({"raw": [("message_start", {"type": "message_start", "message": {"usage": {}}}),
                           ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})]})
    with pytest.raises(ModelError) as ei:
        run(p)
    assert ei.value.retryable and "Overloaded" in ei.value.message
    server.script({"raw": [("message_start", {"type": "message_start", "message": {"usage": {}}})]})
    with pytest.raises(ModelError) as ei:
        run(p)
    assert ei.value.message == "stream closed before message_stop"


def test_anthropic_url_rule_and_budget():
    assert messages_url("https://x.test/v1") == "https://x.test/v1/messages"
    assert messages_url("https://api.deepseek.com/anthropic") == "https://api.deepseek.com/anthropic/v1/messages"
    assert messages_url("https://api.anthropic.com") == "https://api.anthropic.com/v1/messages"
    assert messages_url("https://gw.test/") == "https://gw.test/anthropic/v1/messages"
    assert thinking_budget("low", 32000) == 4000
    assert thinking_budget("max", 32000) == 30976
    assert thinking_budget("high", 1500) == 1024
    assert thinking_budget("none", 32000) == 0
    p = AnthropicProvider("secret", "https://api.anthropic.com")
    h = p.headers("s")
    assert h["x-api-key"] == "secret" and "Authorization" not in h
