"""Compaction through the real engine: automatic at turn start past context_limit, /compact, and
the one-shot compaction + retry after a context-overflow error. The summary is a journal entry,
so a restarted engine's /resume still sends it."""

from __future__ import annotations

import json

from fakeserver import request_input_texts
from harness import run_turn

BIG = "word " * 26_000          # > 20k tokens: older than the 20k kept tail, so it can be folded
SUMMARY = "SUMMARY: the user pasted a long list of words."
COMPACTED = "[Earlier conversation compacted to a summary for context efficiency]\n\n"


def config(window: int = 0) -> dict:
    """Test config; ``window`` > 0 shrinks gpt-test's context window to force compaction."""
    cfg = {"retry_attempts": 0}
    if window:
        cfg["models"] = [{"name": "gpt-test", "context_window": window, "max_output_tokens": 4000}]
    return cfg


def turn(eng, text: str, timeout: float = 20) -> int:
    return run_turn(eng, text, timeout)


def is_summary_request(req) -> bool:
    texts = request_input_texts(req)
    return len(texts) == 1 and texts[0].startswith("Summarize this earlier conversation:\n\n")


def test_automatic_compaction_then_request_carries_summary_and_resume_keeps_it(engine, server):
    a = engine(config(30_000))       # context_limit 22 500
    sid = a.wait_for("startup")["session_id"]
    assert a.wait_for("model_status")["context_limit"] == 22_500
    server.script({"text": "noted"}, {"text": SUMMARY}, {"text": "answer after compaction"})
    m = turn(a, BIG)
    assert "compaction_start" not in a.types_since(m)        # nothing older than the latest message
    m = turn(a, "what did I paste?")
    evs = [e for e in a.since(m) if e["type"] != "model_status"]   # the loop interleaves it freely
    types = [e["type"] for e in evs]
    i = types.index("compaction_start")
    assert types[i:].index("compaction_end") > 0 and "compaction_progress" in types
    j = i + types[i:].index("compaction_end")
    assert types[j + 1:j + 3] == ["context_usage", "status"] and evs[j + 2]["message"] == "streaming"
    assert a.since(m, "compaction_progress")[-1]["output_tokens"] == (len(SUMMARY) + 3) // 4
    summary_req, turn_req = server.requests[1], server.requests[2]
    assert is_summary_request(summary_req) and BIG.strip() in request_input_texts(summary_req)[0]
    assert summary_req["body"].get("tools") in (None, [])
    texts = request_input_texts(turn_req)
    assert texts[0] == COMPACTED + SUMMARY
    assert texts[-1] == "what did I paste?" and BIG not in texts
    assert "noted" in json.dumps(turn_req["body"]["input"])   # the kept tail stays verbatim
    a.close()

    b = engine(config(30_000))
    m = b.send({"op": "command", "input": f"/resume {sid}"})
    b.wait_status(f"resumed session {sid}", start=m)
    server.script({"text": "still compacted"})
    turn(b, "and now?")
    texts = request_input_texts(server.requests[-1])
    assert texts[0] == COMPACTED + SUMMARY and texts[-1] == "and now?" and BIG not in texts


def test_manual_compact_and_nothing_to_compact(engine, server):
    a = engine(config())
    m = a.send({"op": "command", "input": "/compact"})
    a.wait_status("ready", start=m)
    assert [e["message"] for e in a.since(m, "info")] == ["nothing old enough to compact"]
    server.script({"text": "noted"}, {"text": "ok"}, {"text": SUMMARY}, {"text": "after"})
    turn(a, BIG)
    turn(a, "short")
    m = a.send({"op": "command", "input": "/compact"})
    a.wait_status("ready", start=m, timeout=20)
    types = [t for t in a.types_since(m) if t != "model_status"]   # the loop interleaves it freely
    assert types[:2] == ["context_usage", "status"] and a.since(m, "status")[0]["message"] == "compacting"
    k = types.index("compaction_end")
    assert "compaction_start" in types[:k] and types[k + 1:] == ["context_usage", "status"]
    assert is_summary_request(server.requests[2])
    turn(a, "next")
    assert request_input_texts(server.requests[-1])[0] == COMPACTED + SUMMARY
    m = a.send({"op": "command", "input": "/context"})
    line = a.wait_for(lambda e: e.get("type") == "info" and e["message"].startswith("context:"), start=m)
    assert "compacted=true" in line["message"]


def test_failed_summary_reports_compaction_failed_and_status(engine, server):
    a = engine(config())
    server.script({"text": "noted"}, {"text": "ok"}, {"text": ""})
    turn(a, BIG)
    turn(a, "short")
    m = a.send({"op": "command", "input": "/compact"})
    a.wait_status("ready", start=m, timeout=20)
    failed = a.since(m, "compaction_failed")
    assert failed and failed[0]["error"] == "summarization produced no output"
    assert [t for t in a.types_since(m) if t != "model_status"][-1] == "status"


def test_context_overflow_compacts_once_and_retries(engine, server):
    a = engine(config())
    overflow = {"status": 400, "body": {"error": {
        "message": "This model's maximum context length is 8192 tokens.", "type": "invalid_request_error",
        "code": "context_length_exceeded"}}}
    server.script({"text": "noted"}, overflow, {"text": SUMMARY}, {"text": "recovered"})
    turn(a, BIG)
    m = a.send({"op": "user_message", "content": "too much?"})
    a.wait_for(lambda e: e.get("type") == "assistant_delta", start=m, timeout=20)
    a.wait_status("ready", start=a.mark() - 1, timeout=20)
    evs = a.since(m)
    infos = [e["message"] for e in evs if e["type"] == "info"]
    assert "request exceeded the model's context window; compacting and retrying" in infos
    assert not [e for e in evs if e["type"] == "error"]
    types = [e["type"] for e in evs]
    assert types.count("user_message") == 1 and "compaction_end" in types
    # the failed request does not end the turn for the client: no ready (nor a finished turn's
    # context_usage) between the overflow info and the compaction, and model_status stays busy
    i = types.index("info")
    after = [(e["type"], e.get("message")) for e in evs[i + 1:] if e["type"] != "model_status"]
    assert after[0] == ("status", "compacting"), after[:3]
    statuses = [e["message"] for e in evs if e["type"] == "status"]
    assert statuses == ["streaming", "compacting", "streaming", "ready"]
    end = max(k for k, e in enumerate(evs) if e["type"] == "status")
    assert not [e for e in evs[:end] if e["type"] == "model_status" and e["state"] == "ready"]
    assert is_summary_request(server.requests[2])
    texts = request_input_texts(server.requests[3])
    assert texts[0] == COMPACTED + SUMMARY and texts[-1] == "too much?"
    assert texts.count("too much?") == 1                     # the re-run adds no user entry
    # with nothing old enough to fold, an overflow is simply reported
    server.script(overflow)
    m = a.send({"op": "command", "input": "/new"})
    a.wait_for(lambda e: e.get("message", "").startswith("new session"), start=m)
    m = turn(a, "tiny")
    assert [e["message"] for e in a.since(m, "error")][0].find("maximum context length") >= 0
