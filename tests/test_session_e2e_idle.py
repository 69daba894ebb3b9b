"""Resume summaries through the real engine: after an idle period (shortened through
JUCODE_RESUME_SUMMARY_IDLE_SECONDS) the light model writes one `Working:`/`Completed:` sentence
into the session's sidecar, once per idle period, cancelled by a starting turn, silent on
failure; the resume_view items stay {id, label, active}."""

from __future__ import annotations

import json
import time

import pytest

from fakeserver import request_input_texts
from harness import run_turn as turn

from jucode.session.summary import list_sessions

IDLE = "0.2"
MARK = "Recent conversation:"        # only the summary request carries this text
MODELS = [{"name": "gpt-test", "context_window": 200_000, "max_output_tokens": 4000},
          {"name": "gpt-5.4-mini", "context_window": 400_000, "max_output_tokens": 4000}]


@pytest.fixture
def eng(engine):
    return engine({"retry_attempts": 0, "models": MODELS},
                  env={"JUCODE_RESUME_SUMMARY_IDLE_SECONDS": IDLE})


def sidecar(eng) -> dict:
    sid = eng.wait_for("startup")["session_id"]
    path = next(eng.profile.glob(f"sessions/*/{sid}.json"))
    return json.loads(path.read_text())


def wait_sidecar(eng, pred, timeout: float = 10.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        try:
            sc = sidecar(eng)
            if pred(sc):
                return sc
        except (StopIteration, ValueError, OSError):
            sc = None
        if time.monotonic() > deadline:
            raise AssertionError(f"sidecar never matched; last: {sc}\n{eng.stderr_text()[-2000:]}")
        time.sleep(0.02)


def summary_requests(server) -> list:
    return [r for r in server.requests if MARK in json.dumps(r["body"])]


def test_idle_summary_uses_light_model_once_and_stays_internal(eng, server):
    server.script({"text": "It is 42."},
                  {"text": "Completed: answered what six times seven is.", "match": MARK})
    m = turn(eng, "what is 6x7?")
    sc = wait_sidecar(eng, lambda s: s.get("resume_summary"))
    assert sc["resume_summary"] == "answered what six times seven is." and sc["resume_status"] == "completed"
    req = summary_requests(server)[0]
    assert req["body"]["model"] == "gpt-5.4-mini" and req["body"].get("tools") in (None, [])
    assert "'Working:'" in req["body"]["instructions"]
    text = request_input_texts(req)[0]
    assert "User: what is 6x7?" in text and "Assistant: It is 42." in text
    assert eng.since(m, "error") == [] and eng.since(m, "info") == []   # invisible to the client
    # the picker's detail has it; the protocol items stay {id, label, active}
    start = eng.wait_for("startup")
    detail = list_sessions(eng.profile, start["cwd"], start["session_id"])[0].detail
    assert detail == "completed · answered what six times seven is."
    m = eng.send({"op": "command", "input": "/resume"})
    items = eng.wait_for("resume_view", start=m)["items"]
    assert items == [{"id": start["session_id"], "label": "what is 6x7?", "active": True}]
    # once per idle period: several thresholds later, still one summary request
    deadline = time.monotonic() + 5 * float(IDLE)
    while time.monotonic() < deadline:
        assert len(summary_requests(server)) == 1
        time.sleep(0.05)
    # a new turn opens a new idle period; a failing summary is logged, never shown
    server.script({"text": "Sure."}, {"status": 500, "match": MARK})
    m = turn(eng, "and 7x8?")
    deadline = time.monotonic() + 10
    while len(summary_requests(server)) < 2:
        assert time.monotonic() < deadline, "no second summary request"
        time.sleep(0.02)
    eng.send({"op": "command", "input": "/transcript"})      # a round trip after the failure
    eng.wait_for("transcript", start=m)
    assert eng.since(m, "error") == []
    assert sidecar(eng)["resume_summary"] == "answered what six times seven is."


def test_a_starting_turn_cancels_the_pending_summary(eng, server):
    server.script({"text": "first answer"},
                  {"text": "Completed: stale summary.", "stall": 30, "match": MARK})
    turn(eng, "first")
    deadline = time.monotonic() + 10
    while not summary_requests(server):
        assert time.monotonic() < deadline, "no summary request"
        time.sleep(0.02)
    server.script({"text": "second answer"},
                  {"text": "Working: waiting on the second question.", "match": MARK})
    turn(eng, "second")                 # cancels the stalled summary (its answer would be stale)
    sc = wait_sidecar(eng, lambda s: s.get("resume_summary"))
    assert sc["resume_summary"] == "waiting on the second question." and sc["resume_status"] == "working"
    assert "User: second" in request_input_texts(summary_requests(server)[1])[0]
