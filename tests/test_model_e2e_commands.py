"""/model, /effort, cost, retries, request hygiene and key secrecy through the real engine.

Why here and not in unit tests: these are promises to the front-end (exact error texts, what
``context_usage.cost`` shows, what a request carries, what never lands on disk) that only hold
if the engine, the catalog and the providers agree.
"""

import json
import time

import pytest

from harness import run_command

KEY = "sk-secret-Q7zW4kP9mX2vB8nR5tY1"


def last_model_status(eng, mark=0):
    return eng.since(mark, "model_status")[-1]


def warm_up(eng, server):
    """One plain turn first, so time limits measure the retry policy, not the cold SDK import."""
    server.script({"text": "warm"})
    m = eng.send({"op": "user_message", "content": "warm up"})
    eng.wait_status("ready", start=m, timeout=30)
    eng.wait_for(lambda e: e.get("type") == "model_status" and e.get("state") == "ready", start=m)


# -- /model and /effort -------------------------------------------------------------------------

def test_model_command_view_switch_and_errors(engine, server):
    eng = engine(dict(model="gpt-5.4", reasoning_effort="high",
                      models=[{"name": "gpt-5.4", "display_name": "GPT Five Four"}, {"name": "gpt-4o"},
                              {"name": "o3"}]), api_key=KEY)
    ms = [e for e in eng.events if e["type"] == "model_status"][0]
    assert ms["model_label"] == "GPT Five Four" and ms["reasoning_effort"] == "high"
    view, _ = run_command(eng, "/model", "model_view")
    names = [x["model"] for x in view["models"]]
    assert names[:3] == ["gpt-5.4", "gpt-4o", "o3"]
    assert [x for x in view["models"] if x["active"]][0]["model"] == "gpt-5.4"
    assert view["active_effort"] == "high"

    err, _ = run_command(eng, "/model a b c", "error")
    assert err["message"] == "usage: /model [model] [none|low|medium|high]"
    err, _ = run_command(eng, '/model "" high', "error")
    assert err["message"] == "model cannot be empty"
    err, _ = run_command(eng, "/model o3 xhigh", "error")
    assert err["message"] == "o3 does not support reasoning effort: xhigh"
    assert last_model_status(eng)["model"] == "gpt-5.4"   # errors change nothing

    st, _ = run_command(eng, "/model o3", "model_status")      # high kept: o3 offers it
    assert (st["model"], st["reasoning_effort"], st["model_label"]) == ("o3", "high", None)
    assert st["reasoning_efforts"] == ["low", "medium", "high"] and st["context_window"] == 200000
    assert st["context_limit"] == 150000
    st, _ = run_command(eng, "/model gpt-5.4 low", "model_status")
    assert (st["model"], st["reasoning_effort"]) == ("gpt-5.4", "low")
    cfg = json.loads((eng.profile / "config.json").read_text())
    assert cfg["model"] == "gpt-5.4" and cfg["reasoning_effort"] == "low"
    assert cfg["include_project_instructions"] is False          # unknown keys kept


def test_effort_command_cycle_set_and_errors(engine, server):
    eng = engine(dict(model="o3", reasoning_effort="low"), api_key=KEY)
    st, _ = run_command(eng, "/effort", "model_status")
    assert st["reasoning_effort"] == "medium"
    st, _ = run_command(eng, "/effort", "model_status")
    assert st["reasoning_effort"] == "high"
    st, _ = run_command(eng, "/effort", "model_status")
    assert st["reasoning_effort"] == "low"                # wraps
    st, _ = run_command(eng, "/effort HIGH", "model_status")
    assert st["reasoning_effort"] == "high"
    err, _ = run_command(eng, "/effort max", "error")
    assert err["message"] == "o3 does not support reasoning effort: max"
    assert json.loads((eng.profile / "config.json").read_text())["reasoning_effort"] == "high"
    run_command(eng, "/model gpt-4o", "model_status")
    err, _ = run_command(eng, "/effort", "error")
    assert err["message"] == "gpt-4o does not support reasoning effort"
    err, _ = run_command(eng, "/effort high", "error")
    assert err["message"] == "gpt-4o does not support reasoning effort"


# -- cost --------------------------------------------------------------------------------------

def test_cost_with_cached_and_uncached_input(engine, server):
    eng = engine(dict(models=[{"name": "gpt-test", "context_window": 100000,
                                           "input_cost": 2.0, "cached_input_cost": 0.5, "output_cost": 8.0}]), api_key=KEY)
    server.script({"text": "a", "usage": {"input": 1000, "cached": 400, "output": 100}},
                  {"text": "b", "usage": {"input": 3000, "cached": 0, "output": 50}})
    m = eng.send({"op": "user_message", "content": "one"})
    eng.wait_status("ready", start=m)
    cu = eng.since(m, "context_usage")[-1]
    first = (600 * 2.0 + 400 * 0.5 + 100 * 8.0) / 1e6
    assert cu["cost"] == pytest.approx(first, abs=1e-9)
    m = eng.send({"op": "user_message", "content": "two"})
    eng.wait_status("ready", start=m)
    cu = eng.since(m, "context_usage")[-1]
    assert cu["cost"] == pytest.approx(first + (3000 * 2.0 + 50 * 8.0) / 1e6, abs=1e-9)
    m = eng.send({"op": "command", "input": "/context"})
    tok = eng.wait_for(lambda e: e.get("type") == "info" and e["message"].startswith("context_tokens:"),
                       start=m)["message"]
    assert "api_usage_input=4000 api_usage_cached_input=400 api_usage_output=150 cost=$0.0086" in tok


def test_unknown_prices_mean_zero_cost(engine, server):
    eng = engine(dict(model="some-local-model"), api_key=KEY)
    server.script({"text": "a", "usage": {"input": 1000, "cached": 400, "output": 100}})
    m = eng.send({"op": "user_message", "content": "one"})
    eng.wait_status("ready", start=m)
    assert eng.since(m, "context_usage")[-1]["cost"] == 0


# -- retries -----------------------------------------------------------------------------------

def test_429_retry_after_two_seconds_waits(engine, server):
    eng = engine(api_key=KEY)
    server.script({"status": 429, "headers": {"Retry-After": "2"},
                   "body": {"error": {"message": "slow down", "type": "rate_limit_exceeded"}}},
                  {"text": "after the wait"})
    m = eng.send({"op": "user_message", "content": "go"})
    eng.wait_status("ready", start=m, timeout=20)
    r = eng.wait_for("retrying", start=m)
    assert r["delay_ms"] >= 2000 and r["attempt"] == 2 and "429" in r["reason"]
    t0, t1 = server.requests[-2]["t"], server.requests[-1]["t"]
    assert 1.9 <= t1 - t0 < 5.0
    assert "".join(e["delta"] for e in eng.since(m, "assistant_delta")) == "after the wait"
    assert not eng.since(m, "error")


def test_429_retry_after_120_fails_fast(engine, server):
    eng = engine(api_key=KEY)
    warm_up(eng, server)
    server.script({"status": 429, "headers": {"Retry-After": "120"},
                   "body": {"error": {"message": "quota", "type": "rate_limit_exceeded"}}})
    t = time.monotonic()
    m = eng.send({"op": "user_message", "content": "go"})
    err = eng.wait_for("error", start=m)
    eng.wait_status("ready", start=m)
    assert time.monotonic() - t < 5.0
    assert "429" in err["message"]
    assert not eng.since(m, "retrying") and len(server.requests) == 2


# -- request hygiene ---------------------------------------------------------------------------

def test_responses_request_hygiene(engine, server):
    eng = engine(dict(model="o3", reasoning_effort="medium"), api_key=KEY)
    sid = [e for e in eng.events if e["type"] == "startup"][0]["session_id"]
    server.script({"text": "x"})
    m = eng.send({"op": "user_message", "content": "q"})
    eng.wait_status("ready", start=m)
    req = server.requests[-1]
    body, h = req["body"], req["headers"]
    assert body["prompt_cache_key"] == sid
    assert h["session-id"] == sid and h["thread-id"] == sid and h["x-client-request-id"] == sid
    assert h["authorization"] == f"Bearer {KEY}"
    assert body["store"] is False and body["stream"] is True
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert body["parallel_tool_calls"] is True and body["tool_choice"] == "auto"
    assert body["max_output_tokens"] == 100000
    run_command(eng, "/model gpt-4o", "model_status")         # no efforts -> no reasoning block
    server.script({"text": "y"})
    m = eng.send({"op": "user_message", "content": "q2"})
    eng.wait_status("ready", start=m)
    body = server.requests[-1]["body"]
    assert "effort" not in (body.get("reasoning") or {})
    assert body["model"] == "gpt-4o"


def test_chat_request_hygiene_and_effort_omitted(engine, server):
    eng = engine(dict(protocol="chat", model="gpt-4o"), api_key=KEY)
    sid = [e for e in eng.events if e["type"] == "startup"][0]["session_id"]
    server.script({"text": "x"})
    m = eng.send({"op": "user_message", "content": "q"})
    eng.wait_status("ready", start=m)
    req = server.requests[-1]
    assert req["headers"]["session-id"] == sid
    assert "reasoning_effort" not in req["body"]
    assert req["body"]["stream_options"] == {"include_usage": True}


def test_read_timeout_is_configurable(engine, server):
    eng = engine(dict(read_timeout_seconds=1, retry_attempts=0), api_key=KEY)
    warm_up(eng, server)
    server.script({"text": "late", "stall": 4})
    t = time.monotonic()
    m = eng.send({"op": "user_message", "content": "q"})
    err = eng.wait_for("error", start=m, timeout=10)
    eng.wait_status("ready", start=m)
    assert time.monotonic() - t < 3.5
    assert "timed out" in err["message"].lower() or "timeout" in err["message"].lower(), err


# -- secrets -----------------------------------------------------------------------------------

def test_api_key_never_in_events_logs_or_session_files(engine, server):
    eng = engine(env={"JUCODE_LOG": "debug"}, api_key=KEY)
    server.script({"status": 500}, {"text": "fine"})
    m = eng.send({"op": "user_message", "content": "hello"})
    eng.wait_status("ready", start=m, timeout=15)
    info, _ = run_command(eng, "/config", "info")
    assert "auth_key=" in info["message"] and KEY not in info["message"]
    assert KEY[:3] in info["message"] and KEY[-4:] in info["message"]
    run_command(eng, "/doctor", "info")
    eng.close()
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"   # it was really used
    blob = b"".join(eng.raw_lines)
    assert KEY.encode() not in blob and KEY[4:-4].encode() not in blob
    assert KEY not in eng.stderr_text()
    files = [p for p in eng.profile.rglob("*") if p.is_file()]
    assert any("session" in str(p) for p in files), files
    for p in files:
        assert KEY[4:-4].encode() not in p.read_bytes(), p
