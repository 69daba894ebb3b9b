"""Every wire API and every compatibility quirk, driven through the real engine subprocess.

Why end to end: the provider unit tests prove parsing; these prove the engine turns what the
providers yield into the protocol events a front-end renders, and that tool outputs travel back
to the model in each wire format.
"""

import pytest


def joined(eng, mark, type_):
    return "".join(x["delta"] for x in eng.since(mark, type_))


# (config overrides, expected path suffix, renderer kind)
WIRES = {
    "responses": ({}, "/responses", "responses"),
    "chat": ({"protocol": "chat"}, "/chat/completions", "chat"),
    "anthropic-config": ({"protocol": "anthropic"}, "/messages", "anthropic"),
    "anthropic-claude-model": ({"model": "claude-sonnet-4-5"}, "/messages", "anthropic"),
    "azure": ({"protocol": "azure"}, "/responses", "responses"),
    "codex": ({"protocol": "codex"}, "/codex/responses", "responses"),
}


def _tool_outputs_in(req: dict) -> dict:
    """call_id -> output text, whatever the wire format of the recorded request."""
    body, out = req["body"], {}
    for item in body.get("input") or []:
        if item.get("type") == "function_call_output":
            out[item["call_id"]] = item["output"]
    for msg in body.get("messages") or []:
        if msg.get("role") == "tool":
            out[msg["tool_call_id"]] = msg["content"]
        if isinstance(msg.get("content"), list):
            for block in msg["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    c = block.get("content")
                    if isinstance(c, list):
                        c = "".join(p.get("text", "") for p in c if isinstance(p, dict))
                    out[block["tool_use_id"]] = c
    return out


@pytest.mark.parametrize("wire", list(WIRES))
def test_wire_streams_text_reasoning_and_parallel_tool_calls(engine, server, wire):
    cfg, suffix, kind = WIRES[wire]
    eng = engine(cfg)
    (eng.cwd / "a.txt").write_text("alpha-content\n")
    (eng.cwd / "b.txt").write_text("beta-content\n")
    eng.send({"op": "set_approval_mode", "mode": "full-access"})
    server.script(
        {"reasoning": "Need both files.", "text": "Reading.",
         "tool_calls": [{"name": "read", "arguments": {"path": "a.txt"}, "call_id": "call_a"},
                        {"name": "read", "arguments": {"path": "b.txt"}, "call_id": "call_b"}]},
        {"text": "Both read.", "reasoning": "Done now."})
    m = eng.send({"op": "user_message", "content": "read both"})
    eng.wait_status("ready", start=m, timeout=20)
    assert not eng.since(m, "error"), eng.since(m, "error")
    assert joined(eng, m, "reasoning_delta") == "Need both files.Done now."
    assert joined(eng, m, "assistant_delta") == "Reading.Both read."
    outs = {e["call_id"]: e for e in eng.since(m, "tool_output")}
    assert set(outs) == {"call_a", "call_b"}
    assert "alpha-content" in outs["call_a"]["output"] and not outs["call_a"]["is_error"]
    assert "beta-content" in outs["call_b"]["output"] and not outs["call_b"]["is_error"]
    assert len(eng.since(m, "usage")) == 2
    reqs = server.requests[-2:]
    for r in reqs:
        assert r["kind"] == kind and r["path"].split("?")[0].endswith(suffix), r["path"]
    sent = _tool_outputs_in(reqs[1])
    assert set(sent) == {"call_a", "call_b"}
    assert "alpha-content" in sent["call_a"] and "beta-content" in sent["call_b"]
    if wire == "azure":
        assert "api-version=" in reqs[0]["path"]
        assert reqs[0]["headers"].get("api-key") == "sk-test-key-123456"
        assert "authorization" not in reqs[0]["headers"]
    if kind == "anthropic":
        # the thinking block (with its signature) is replayed on the follow-up request
        blocks = [b for msg in reqs[1]["body"]["messages"] if isinstance(msg.get("content"), list)
                  for b in msg["content"] if isinstance(b, dict)]
        if reqs[1]["body"].get("thinking"):
            assert any(b.get("type") == "thinking" and b.get("signature") for b in blocks)


def _jwt(claims: dict) -> str:
    import base64
    import json

    def part(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")
    return f"{part({'alg': 'none'})}.{part(claims)}.c2ln"


def test_codex_headers_account_id_and_turn_state_echo(engine, server):
    token = _jwt({"https://api.openai.com/auth": {"chatgpt_account_id": "acct-42"}})
    eng = engine({"protocol": "codex"}, api_key=token)
    server.script({"text": "one", "headers": {"x-codex-turn-state": "ts-1"}},
                  {"text": "two", "headers": {"x-codex-turn-state": "ts-2"}},
                  {"text": "three"})
    for word in ("a", "b", "c"):
        m = eng.send({"op": "user_message", "content": word})
        eng.wait_status("ready", start=m, timeout=20)
        assert not eng.since(m, "error"), eng.since(m, "error")
    first, second, third = server.requests[-3:]
    for r in (first, second, third):
        assert r["path"].endswith("/codex/responses")
        h = r["headers"]
        assert (h["openai-beta"], h["originator"], h["version"]) == ("responses=experimental", "jucode", "0.153.0")
        assert h["chatgpt-account-id"] == "acct-42" and h["authorization"] == f"Bearer {token}"
    assert "x-codex-turn-state" not in first["headers"]
    # captured once (the first value wins) and echoed on every later request of the session
    assert second["headers"]["x-codex-turn-state"] == third["headers"]["x-codex-turn-state"] == "ts-1"


def test_anthropic_cache_read_counts_as_cached_input(engine, server):
    eng = engine(dict(model="claude-sonnet-4-5"))
    server.script({"text": "hi", "usage": {"input": 100, "cached": 300, "cache_write": 50, "output": 7}})
    m = eng.send({"op": "user_message", "content": "x"})
    eng.wait_status("ready", start=m)
    u = eng.wait_for("usage", start=m)
    assert (u["input_tokens"], u["cached_input_tokens"], u["output_tokens"]) == (450, 300, 7)


# -- quirks of OpenAI-compatible servers ------------------------------------------------------------

def test_chat_llamacpp_repeated_ids_and_no_usage(engine, server):
    eng = engine(dict(protocol="chat"))
    (eng.cwd / "a.txt").write_text("alpha\n")
    eng.send({"op": "set_approval_mode", "mode": "full-access"})
    server.script({"tool_calls": [{"name": "read", "arguments": {"path": "a.txt"}, "call_id": "c1"}],
                   "repeat_ids": True, "no_usage": True, "chunk": 2},
                  {"text": "ok", "no_usage": True})
    m = eng.send({"op": "user_message", "content": "go"})
    eng.wait_status("ready", start=m)
    assert not eng.since(m, "error")
    start_ev = eng.wait_for("tool_start", start=m)
    assert start_ev["name"] == "read" and start_ev["call_id"] == "c1"   # not "readread…"
    out = eng.wait_for("tool_output", start=m)
    assert "alpha" in out["output"] and not out["is_error"]
    sent = server.requests[-1]["body"]["messages"]
    calls = [c for msg in sent for c in (msg.get("tool_calls") or [])]
    assert [(c["id"], c["function"]["name"]) for c in calls] == [("c1", "read")]
    assert joined(eng, m, "assistant_delta") == "ok"
    # no usage chunk: the turn still ends cleanly and counts nothing it did not get
    for u in eng.since(m, "usage"):
        assert u["input_tokens"] == 0 and u["output_tokens"] == 0


@pytest.mark.parametrize("field", ["reasoning", "reasoning_content"])
def test_chat_reasoning_field_variants(engine, server, field):
    eng = engine(dict(protocol="chat"))
    server.script({"text": "answer", "reasoning": "because", "reasoning_field": field})
    m = eng.send({"op": "user_message", "content": "q"})
    eng.wait_status("ready", start=m)
    assert joined(eng, m, "reasoning_delta") == "because"
    assert joined(eng, m, "assistant_delta") == "answer"


@pytest.mark.parametrize("proto", ["responses", "chat"])
def test_plain_json_reply_instead_of_sse(engine, server, proto):
    eng = engine(dict(protocol=proto))
    if proto == "chat":
        body = {"id": "x", "object": "chat.completion", "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "json says hi"}}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}}
    else:
        body = {"id": "resp_x", "object": "response", "status": "completed", "output": [
            {"type": "message", "id": "m1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "json says hi", "annotations": []}]}],
            "usage": {"input_tokens": 11, "output_tokens": 3, "total_tokens": 14}}
    server.script({"json": body})
    m = eng.send({"op": "user_message", "content": "q"})
    eng.wait_status("ready", start=m)
    assert not eng.since(m, "error"), eng.since(m, "error")
    assert joined(eng, m, "assistant_delta") == "json says hi"
    u = eng.wait_for("usage", start=m)
    assert (u["input_tokens"], u["output_tokens"]) == (11, 3)


@pytest.mark.parametrize("proto", ["responses", "chat", "anthropic"])
def test_html_error_page_names_the_base_url(engine, server, proto):
    eng = engine(dict(protocol=proto))
    server.script({"html": "<!DOCTYPE html><html><body>Welcome to nginx</body></html>"})
    m = eng.send({"op": "user_message", "content": "q"})
    eng.wait_status("ready", start=m)
    err = eng.wait_for("error", start=m)
    assert f"127.0.0.1:{server.port}" in err["message"], err
    assert "text/html" in err["message"] and "base_url" in err["message"]
    assert not eng.since(m, "retrying")
    assert len(server.requests) == 1


def test_effort_none_is_sent_to_reasoning_models_only(engine, server):
    eng = engine({"model": "gpt-5.5", "reasoning_effort": "none"})
    for model, expected in (("gpt-5.5", {"effort": "none"}), ("gpt-4o", None)):
        if model != "gpt-5.5":
            m = eng.send({"op": "command", "input": f"/model {model}"})
            eng.wait_for("model_status", start=m)
        server.script({"text": "ok"})
        m = eng.send({"op": "user_message", "content": "q"})
        eng.wait_status("ready", start=m, timeout=15)
        assert server.requests[-1]["body"].get("reasoning") == expected, model
