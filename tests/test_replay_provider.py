"""ReplayProvider: scripted streams, branching, errors, cancellation, and the shipped examples."""

import glob
import json
import os
import threading
import time

import pytest

from jucode.llm.base import Interrupted, ModelError, ModelRequest
from jucode.llm.replay import ReplayProvider, ScriptError, load_script
from jucode.planmode import PartialPlanParser

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples")


def _req(text="hi", tool_result=False):
    items = [{"role": "user", "content": [{"type": "input_text", "text": text}]}]
    if tool_result:
        items += [{"type": "function_call", "call_id": "c", "name": "read", "arguments": "{}"},
                  {"type": "function_call_output", "call_id": "c", "output": "{}"}]
    return ModelRequest(model="replay", instructions="sys", input=items)


def _run(provider, request, cancel=None):
    events = []
    resp = provider.stream(request, events.append, cancel or threading.Event())
    return events, resp


def test_streams_text_reasoning_and_tool_args():
    script = {"chunk": 4, "responses": [[
        {"reasoning": "Look first."},
        {"text": "Hello "}, {"text": ["wor", "ld"]},
        {"tool": "read", "arguments": {"path": "README.md"}, "call_id": "call_r"},
    ]]}
    events, resp = _run(ReplayProvider(script), _req())
    kinds = [e.kind for e in events]
    assert kinds[0] == "headers"
    assert "".join(e.delta for e in events if e.kind == "reasoning") == "Look first."
    assert [e.delta for e in events if e.kind == "text"] == ["Hell", "o ", "wor", "ld"]
    start = [e for e in events if e.kind == "tool_call_start"]
    assert len(start) == 1 and start[0].call_id == "call_r" and start[0].name == "read"
    args = "".join(e.delta for e in events if e.kind == "tool_args")
    assert json.loads(args) == {"path": "README.md"}
    assert kinds.index("tool_call_start") < kinds.index("tool_args")
    assert [i.get("type") for i in resp.items] == ["reasoning", "message", "function_call"]
    assert resp.items[1]["content"][0]["text"] == "Hello world"
    assert resp.items[2] == {"type": "function_call", "call_id": "call_r", "name": "read",
                             "arguments": args}
    assert resp.finish_reason == "tool_calls"
    assert resp.usage.input_tokens > 0 and resp.usage.output_tokens > 0
    assert resp.usage.reasoning_tokens == 3


def _text(resp):
    return resp.items[0]["content"][0]["text"]


def test_conditions_groups_fallback_and_cache_usage():
    script = [
        {"match": "yes", "group": "answer", "steps": [{"text": "A"}]},
        {"match": ["no", "nope"], "group": "answer", "steps": [{"text": "B"}]},
        {"after": "tool", "steps": [{"text": "after tool"}]},
        {"regex": "^child\\b", "steps": [{"text": "child"}]},
        [{"text": "plain"}],
    ]
    p = ReplayProvider(script)
    assert _text(_run(p, _req("nope"))[1]) == "B"
    assert p.remaining == 3                        # "A" dropped with its group
    assert _text(_run(p, _req("yes"))[1]) == "plain"
    assert _text(_run(p, _req("child task"))[1]) == "child"   # passed-over responses stay
    assert _text(_run(p, _req("x", tool_result=True))[1]) == "after tool"
    events, resp = _run(p, _req("again"))
    assert "no more responses" in _text(resp)
    assert resp.finish_reason == "stop"
    # later requests with a shared prefix report a cached prefix in 64-token blocks
    big = _req("z" * 2000)
    first = _run(p, big)[1].usage
    second = _run(p, big)[1].usage
    assert first.input_tokens > 500 and second.cached_input_tokens > 0
    assert second.cached_input_tokens % 64 == 0 and second.cached_input_tokens <= second.input_tokens


def test_concurrent_requests_do_not_share_a_response():
    p = ReplayProvider([[{"delay_ms": 300}, {"text": "one"}], [{"text": "two"}]])
    got = []
    t = threading.Thread(target=lambda: got.append(_text(_run(p, _req())[1])))
    t.start()
    deadline = time.monotonic() + 2
    while p._state[0] != "busy" and time.monotonic() < deadline:
        time.sleep(0.005)
    assert _text(_run(p, _req())[1]) == "two"      # the busy first response is not reused
    t.join(2)
    assert got == ["one"]


def test_auto_call_ids_are_unique_and_raw_arguments_kept():
    p = ReplayProvider([[{"tool": "bash", "arguments": '{"command": "ls"}'},
                         {"tool": "bash", "arguments": {"command": "pwd"}}]])
    _, resp = _run(p, _req())
    ids = [i["call_id"] for i in resp.items]
    assert len(set(ids)) == 2 and all(ids)
    assert resp.items[0]["arguments"] == '{"command": "ls"}'


def test_retryable_error_then_success_keeps_response():
    p = ReplayProvider([[{"text": "part"}, {"error": "rate limited", "status": 429, "retryable": True,
                                            "retry_after": 0.5, "times": 2}, {"text": "ial"}],
                        [{"text": "next"}]])
    for _ in range(2):
        events = []
        with pytest.raises(ModelError) as exc:
            p.stream(_req(), events.append, threading.Event())
        assert exc.value.retryable and exc.value.status == 429 and exc.value.retry_after == 0.5
        assert [e.delta for e in events if e.kind == "text"] == ["part"]   # partial deltas streamed
    _, resp = _run(p, _req())
    assert resp.items[0]["content"][0]["text"] == "partial"
    assert _run(p, _req())[1].items[0]["content"][0]["text"] == "next"


def test_leading_error_has_no_headers_and_is_not_retryable_by_default():
    p = ReplayProvider([[{"error": "bad request", "status": 400}, {"text": "ok"}]])
    events = []
    with pytest.raises(ModelError) as exc:
        p.stream(_req(), events.append, threading.Event())
    assert not exc.value.retryable and events == []
    assert _run(p, _req())[1].items[0]["content"][0]["text"] == "ok"   # "continue" works


def test_cancel_during_delay_and_streaming_is_fast():
    p = ReplayProvider({"responses": [[{"delay_ms": 5000}, {"text": "never"}],
                                      {"steps": [{"text": "x" * 400, "chunk": 1, "pace_ms": 50}]}]})
    for _ in range(2):
        cancel = threading.Event()
        timer = threading.Timer(0.1, cancel.set)
        timer.start()
        started = time.monotonic()
        with pytest.raises(Interrupted):
            p.stream(_req(), lambda e: None, cancel)
        elapsed = time.monotonic() - started
        timer.cancel()
        assert elapsed < 0.1 + 0.9, elapsed   # far below the 5 s delay / 20 s stream
        p._state[0] = "used"   # the interrupted response stays available; move on to streaming


def test_plan_draft_from_streamed_propose_plan_arguments():
    plan = "# Plan\n\n| File | Change | Why |\n| --- | --- | --- |\n| `a.py` | \"quote\" 🎉 | x |\n"
    p = ReplayProvider({"chunk": 7, "responses": [[{"tool": "propose_plan",
                                                    "arguments": {"title": "T", "plan": plan}}]]})
    events, _ = _run(p, _req())
    parser = PartialPlanParser()
    appends = [parser.feed(e.delta)[1] for e in events if e.kind == "tool_args"]
    assert len(appends) > 5 and "".join(appends) == plan and parser.title == "T"


def test_bad_scripts_are_rejected(tmp_path):
    with pytest.raises(ScriptError):
        load_script({"nope": []})
    with pytest.raises(ScriptError):
        load_script([[{"unknown": 1}]])
    with pytest.raises(ScriptError):
        load_script([{"regex": "(", "steps": []}])
    path = tmp_path / "s.json"
    path.write_text(json.dumps([[{"text": "from file"}]]))
    assert _run(ReplayProvider(str(path)), _req())[1].items[0]["content"][0]["text"] == "from file"


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(EXAMPLES, "*.json"))))
def test_shipped_examples_load_and_play(path):
    """Every example loads and each of its responses plays (errors fire and then pass)."""
    script = load_script(path)
    for index, resp in enumerate(script["responses"]):
        for step in resp["steps"]:
            step.pop("pace_ms", None)
            if "delay_ms" in step:
                step["delay_ms"] = 0
            if "error" in step:
                step["times"] = min(int(step.get("times", 1)), 3)   # "always fails" scripts
        provider = ReplayProvider({"pace_ms": 0, "responses": [resp["steps"]]})
        for _ in range(10):
            try:
                _run(provider, _req())
                break
            except ModelError:
                continue
        else:
            pytest.fail(f"{path} response {index} never completes")


def _converse(provider, turns):
    """Drive the provider like the turn loop would; returns the tool names per request."""
    items, seen = [], []
    for user_text in turns:
        items.append({"role": "user", "content": [{"type": "input_text", "text": user_text}]})
        for _ in range(10):
            resp = provider.stream(ModelRequest(model="r", instructions="", input=list(items)),
                                   lambda e: None, threading.Event())
            items.extend(resp.items)
            calls = [i for i in resp.items if i["type"] == "function_call"]
            seen.append([c["name"] for c in calls] or ["text"])
            if not calls or any(c["name"] == "propose_plan" for c in calls):
                break
            items.extend({"type": "function_call_output", "call_id": c["call_id"], "output": "{}"}
                         for c in calls)
    return seen


def _fast(path):
    script = load_script(os.path.join(EXAMPLES, path))
    script["pace_ms"] = 0
    for resp in script["responses"]:
        for step in resp["steps"]:
            step.pop("pace_ms", None)
            if "delay_ms" in step:
                step["delay_ms"] = 0
    return ReplayProvider(script)


def test_demo_tour_branches_as_documented():
    from jucode.planmode import PlanBook
    book = PlanBook()
    plan = book.add("Add a CHANGELOG", "x")
    revise = book.decide(plan.id, "revise", feedback="also add a 0.1.0 entry").message
    approve = book.decide(plan.id, "approve").message
    seen = _converse(_fast("demo-tour.json"),
                     ["give me a tour", "run the tests", "plan a changelog", revise, approve])
    assert seen == [["read"], ["text"], ["bash"], ["text"], ["ls", "bash", "write"], ["propose_plan"],
                    ["propose_plan"], ["update_plan", "write"], ["update_plan", "bash"],
                    ["update_plan"], ["text"]]


def test_other_examples_branch_as_documented():
    assert _converse(_fast("goals-and-subagents.json"), ["set a goal", "survey the repo"]) == [
        ["create_goal", "update_plan"], ["get_goal", "update_plan", "update_goal"], ["text"],
        ["spawn_agent"], ["wait_agent"], ["text"]]
    # the child's own conversation finds its responses by its task message
    child = _fast("goals-and-subagents.json")
    assert _converse(child, ['<subagent_task path="/root/lister">\nList files\n</subagent_task>']) == [
        ["ls"], ["text"]]
    assert _converse(_fast("unattended.json"), ["clean the build dir",
                                                "[deferred action act-1-abc approved and executed]\nx"]) == [
        ["bash", "write"], ["bash"], ["text"], ["text"]]


def test_shared_provider_keeps_progress_across_turns(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps([[{"text": "one"}], [{"text": "two"}]]))
    ReplayProvider.reset_shared()
    try:
        assert _text(_run(ReplayProvider.shared(str(path)), _req())[1]) == "one"
        assert ReplayProvider.shared(str(path)) is ReplayProvider.shared(str(path))
        assert _text(_run(ReplayProvider.shared(str(path)), _req())[1]) == "two"
    finally:
        ReplayProvider.reset_shared()
