"""Compaction planning rules, folded text, and the projection after applying a summary."""

from __future__ import annotations

import pytest

from jucode.session import (SessionError, SessionStore, apply_compaction, fold_text, plan_compaction,
                            request_items, summary_request_input)

CWD = "/work/compact/project"


def chars(text: str) -> int:
    """Deterministic stand-in tokenizer: one token per 100 characters (at least 1)."""
    return max(1, len(text) // 100)


def user(text):
    return {"type": "user", "content": text}


def say(text):
    return {"type": "response_item", "item": {"type": "message", "role": "assistant",
                                              "content": [{"type": "output_text", "text": text}]}}


def call(cid, name="bash", args='{"command":"ls"}'):
    return {"type": "response_item", "item": {"type": "function_call", "call_id": cid, "name": name,
                                              "arguments": args}}


def out(cid, text, name="bash"):
    return {"type": "tool_output", "call_id": cid, "name": name, "output": text}


BIG = "x" * 1000          # ~10 tokens with `chars`


@pytest.fixture
def store(tmp_path):
    s = SessionStore.create(tmp_path, CWD)
    yield s
    s.close()


def test_nothing_foldable(store):
    assert plan_compaction(store, chars) is None
    store.append(user("only"))
    assert plan_compaction(store, chars) is None
    store.append(say(BIG))
    assert plan_compaction(store, chars, keep_recent_tokens=0) is None   # latest user stays verbatim


def test_keeps_recent_budget_and_latest_user(store):
    for i in range(4):
        store.append(user(f"q{i} " + BIG))      # e1 e3 e5 e7
        store.append(say(f"a{i} " + BIG))       # e2 e4 e6 e8
    plan = plan_compaction(store, chars, keep_recent_tokens=25)
    assert plan is not None
    assert [e.id for e in plan.folded] == [1, 2, 3, 4, 5, 6]      # budget keeps 2 newest
    assert plan.replaced_through == 6 and [e.id for e in plan.kept] == [7, 8]
    # A big budget would keep everything but the oldest; the latest user is never folded.
    store.append(user("latest"))                                      # e9
    plan = plan_compaction(store, chars, keep_recent_tokens=0)
    assert [e.id for e in plan.folded] == list(range(1, 9))
    assert plan_compaction(store, chars, keep_recent_tokens=10**6) is None


def test_never_splits_call_from_output(store):
    store.append(user("do it"))                  # e1
    store.append(say("sure"))                    # e2
    store.append(call("c1"))                     # e3
    store.append(out("c1", BIG * 3))             # e4 (~30 tokens)
    store.append(say("done"))                    # e5
    store.append(user("next"))                   # e6
    store.append(call("c2"))                     # e7
    store.append(out("c2", BIG))                 # e8
    # Budget fits e8 alone: the boundary would fall between c2's call and output → pulled back to e7,
    # then to the latest user e6.
    plan = plan_compaction(store, chars, keep_recent_tokens=12)
    assert plan.replaced_through == 5
    folded = {e.id for e in plan.folded}
    for cid_call, cid_out in [(3, 4), (7, 8)]:
        assert (cid_call in folded) == (cid_out in folded)


def test_boundary_inside_tool_loop_moves_before_call(store):
    store.append(user("start"))                  # e1
    store.append(call("c1"))                     # e2
    store.append(out("c1", BIG))                 # e3
    store.append(call("c2"))                     # e4
    store.append(out("c2", BIG * 2))             # e5
    store.append(call("c3"))                     # e6
    store.append(out("c3", BIG * 2))             # e7
    plan = plan_compaction(store, chars, keep_recent_tokens=0)
    assert plan is None                          # latest user is e1: nothing before it
    store.checkout("e1")
    store.append(user("older"))                  # e8 (sibling) — switch to a path with a user late
    store.append(call("d1"))                     # e9
    store.append(out("d1", BIG))                 # e10
    store.append(user("latest"))                 # e11
    store.append(call("d2"))                     # e12
    store.append(out("d2", BIG))                 # e13
    plan = plan_compaction(store, chars, keep_recent_tokens=0)
    assert [e.id for e in plan.folded] == [8, 9, 10]


def test_fold_text_and_request_shape(store):
    entries = [
        store.append(user("fix the bug")),
        store.append({"type": "user_image", "paths": ["a.png", "b.png"]}),
        store.append({"type": "response_item", "item": {"type": "reasoning", "summary": []}}),
        store.append(call("c1", "read", '{"path":"x.py"}')),
        store.append(out("c1", "file text", "read")),
        store.append(say("found it")),
        store.append({"type": "pinned_skill", "name": "deploy", "content": "..."}),
        store.append({"type": "goal_context", "content": "ship"}),
        store.append({"type": "proposed_plan", "id": "p", "title": "Plan", "markdown": "- step",
                      "status": "approved"}),
        store.append({"type": "branch", "label": "b"}),
    ]
    text = fold_text(entries, previous_summary="before")
    assert text == ("Earlier summary:\nbefore\n\n"
                    "User: fix the bug\n\n"
                    "User attached 2 image(s)\n\n"
                    'Assistant tool call read: {"path":"x.py"}\n\n'
                    "Tool read output: file text\n\n"
                    "Assistant: found it\n\n"
                    "(pinned skill: deploy)\n\n"
                    "Goal context: ship\n\n"
                    "Proposed plan (approved): Plan\n- step")
    assert fold_text(entries[:1]) == "User: fix the bug"
    assert summary_request_input("F") == [
        {"role": "user", "content": [{"type": "input_text", "text": "Summarize this earlier conversation:\n\nF"}]}]


def test_apply_compaction_then_project_and_recompact(tmp_path, store):
    for i in range(3):
        store.append(user(f"q{i} " + BIG))
        store.append(say(f"a{i} " + BIG))
    plan = plan_compaction(store, chars, keep_recent_tokens=45)
    assert plan.replaced_through == 2
    with pytest.raises(SessionError, match="^summarization produced no output$"):
        apply_compaction(store, "  ", plan.replaced_through)
    apply_compaction(store, "SUMMARY ONE", plan.replaced_through)
    items = request_items(store)
    assert items[0] == {"role": "user", "content": [{"type": "input_text", "text":
                        "[Earlier conversation compacted to a summary for context efficiency]\n\nSUMMARY ONE"}]}
    assert [i.get("content")[0]["text"][:2] for i in items[1:]] == ["q1", "a1", "q2", "a2"]
    store.append(user("q3 " + BIG))
    plan2 = plan_compaction(store, chars, keep_recent_tokens=45)
    assert plan2.previous_summary == "SUMMARY ONE"
    assert plan2.text.startswith("Earlier summary:\nSUMMARY ONE\n\nUser: q1 ")
    assert plan2.folded[0].id == 3                 # starts after the previous fold
    sid = store.id
    store.close()
    again = SessionStore.open(tmp_path, CWD, sid)
    try:
        assert request_items(again) == items + [{"role": "user", "content": [
            {"type": "input_text", "text": "q3 " + BIG}]}]
    finally:
        again.close()
