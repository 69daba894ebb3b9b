"""Tree operations, tree/checkpoint views and the transcript, persisted through real files."""

from __future__ import annotations

import pytest

from jucode.session import SessionError, SessionStore
from jucode.session.tree import ago

CWD = "/work/tree/project"


def user(text, **extra):
    return {"type": "user", "content": text, **extra}


def say(text):
    return {"type": "response_item", "item": {"type": "message", "role": "assistant",
                                              "content": [{"type": "output_text", "text": text}]}}


@pytest.fixture
def store(tmp_path):
    s = SessionStore.create(tmp_path, CWD)
    yield s
    s.close()


def reopen(tmp_path, s):
    sid = s.id
    s.close()
    return SessionStore.open(tmp_path, CWD, sid)


def test_checkout_then_append_forks(tmp_path, store):
    store.append(user("first question"))        # e1
    store.append(say("answer one"))             # e2
    store.append(user("second question"))       # e3
    store.append(say("answer two"))             # e4
    res = store.checkout("e3")
    assert res.fill_input == "second question" and store.leaf_id == 2
    assert res.status == "checked out e3"
    e5 = store.append(user("second question, edited"))
    assert e5.parent_id == 2
    nodes = store.tree_view()
    assert nodes == [
        {"id": "e1", "parent_id": None, "label": "first question", "active": True},
        {"id": "e3", "parent_id": "e1", "label": "second question", "active": False},
        {"id": "e5", "parent_id": "e1", "label": "second question, edited", "active": True},
    ]
    assert store.transcript() == [{"role": "user", "content": "first question"},
                                  {"role": "assistant", "content": "answer one"},
                                  {"role": "user", "content": "second question, edited"}]
    again = reopen(tmp_path, store)
    try:
        assert again.leaf_id == 5 and again.tree_view() == nodes
    finally:
        again.close()


def test_checkout_persists_leaf_without_append(tmp_path, store):
    store.append(user("a"))
    store.append(user("b"))
    store.checkout("e2")
    again = reopen(tmp_path, store)
    try:
        assert again.leaf_id == 1
    finally:
        again.close()


def test_checkout_errors(store):
    store.append(user("a"))
    store.append(say("b"))
    with pytest.raises(SessionError, match="^entry e2 is not a user node$"):
        store.checkout("e2")
    with pytest.raises(SessionError, match="^entry e9 not found$"):
        store.checkout("e9")
    with pytest.raises(SessionError, match="^branch not found: nope$"):
        store.checkout("nope")


def test_fork_checkout_delete(tmp_path, store):
    store.append(user("base"))                   # e1
    res = store.fork("experiment")               # e2 branch
    assert res.status == "forked experiment: e2"
    store.append(user("try it"))                 # e3
    assert store.branch_heads == {"root": 1, "experiment": 3}
    for bad, msg in [("", "branch label is required"), ("a\nb", "branch label must be a single line"),
                     ("root", "root is reserved"), ("experiment", "branch already exists: experiment")]:
        with pytest.raises(SessionError) as info:
            store.fork(bad)
        assert str(info.value) == msg
    assert store.checkout("root").status == "checked out root" and store.leaf_id == 1
    store.append(user("mainline"))               # e4
    assert store.transcript() == [{"role": "user", "content": "base"},
                                  {"role": "user", "content": "mainline"}]
    store.checkout("experiment")
    assert store.leaf_id == 3
    assert store.transcript() == [{"role": "user", "content": "base"},
                                  {"role": "branch", "label": "experiment"},
                                  {"role": "user", "content": "try it"}]
    with pytest.raises(SessionError, match="^cannot delete root branch$"):
        store.delete("root")
    with pytest.raises(SessionError, match="^branch not found: ghost$"):
        store.delete("ghost")
    assert store.delete("experiment").status == "deleted branch experiment"
    assert sorted(store.entries) == [1, 4] and store.leaf_id == 1
    assert store.branch_heads == {"root": 4}
    again = reopen(tmp_path, store)
    try:
        assert sorted(again.entries) == [1, 4] and again.leaf_id == 1
        assert again.branch_heads == {"root": 4}
        again.fork("experiment")                 # the label is free again
        assert again.entries[again.leaf_id].kind == {"type": "branch", "label": "experiment"}
    finally:
        again.close()


def test_rewind_targets_and_rewind(store):
    store.append(user("one\nsecond line"))
    store.append(say("r1"))
    store.append(user(""))
    store.append(say("r2"))
    for e in store.entries.values():
        e.created_at = 1000
    items = store.rewind_targets(now=1000 + 125)
    assert items == [{"id": "e1", "label": "one", "detail": "2m ago"},
                     {"id": "e3", "label": "(empty)", "detail": "2m ago"}]
    with pytest.raises(SessionError, match="^that is not a rewindable turn$"):
        store.rewind("e2")
    res = store.rewind("e3")
    assert store.leaf_id == 2 and res.restore_since == 1000
    with pytest.raises(SessionError, match="^that is not a rewindable turn$"):
        store.rewind("e3")                       # no longer on the active path
    assert [ago(s) for s in (5, 59, 60, 3599, 3600, 86399, 86400 * 3)] == \
        ["5s ago", "59s ago", "1m ago", "59m ago", "1h ago", "23h ago", "3d ago"]


def test_transcript_rendering(store):
    store.append(user("look", files=["a.py"]))
    store.append({"type": "user_image", "paths": ["/tmp/shot.png"]})
    store.append({"type": "response_item", "item": {"type": "reasoning", "summary": []}})
    store.append({"type": "response_item", "item": {"type": "function_call", "call_id": "c1",
                                                    "name": "read", "arguments": "{}"}})
    store.append({"type": "tool_output", "call_id": "c1", "name": "read", "output": "text"})
    store.append({"type": "response_item", "item": {"role": "user", "content": [
        {"type": "input_text", "text": "injected reminder"}]}})
    store.append(say(""))
    store.append({"type": "proposed_plan", "id": "p1", "title": "Plan", "markdown": "- a", "status": "pending"})
    store.append({"type": "pinned_skill", "name": "s", "content": "c"})
    store.append({"type": "goal_context", "content": "goal"})
    store.append({"type": "proposed_plan", "id": "p1", "title": "Plan", "markdown": "- a", "status": "approved"})
    store.append(say("all done"))
    assert store.transcript() == [
        {"role": "user", "content": "look", "images": ["/tmp/shot.png"], "files": ["a.py"]},
        {"role": "tool", "name": "read", "output": "text"},
        {"role": "plan", "id": "p1", "title": "Plan", "content": "- a", "status": "approved"},
        {"role": "assistant", "content": "all done"},
    ]
