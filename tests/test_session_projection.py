"""Request projection: canonical items, pairing repair, images re-read from disk."""

from __future__ import annotations

import base64

import pytest

from jucode.session import SessionStore, request_items, sanitize_tool_pairs

CWD = "/work/proj/project"
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")


def ut(text):
    return {"role": "user", "content": [{"type": "input_text", "text": text}]}


def fc(cid, name="bash"):
    return {"type": "function_call", "call_id": cid, "name": name, "arguments": "{}"}


def fco(cid, out="ok"):
    return {"type": "function_call_output", "call_id": cid, "output": out}


def msg(text):
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}


@pytest.fixture
def store(tmp_path):
    s = SessionStore.create(tmp_path, CWD)
    yield s
    s.close()


def test_projection_pairs_calls_with_outputs(store):
    store.append({"type": "user", "content": "hi"})
    store.append({"type": "response_item", "item": {"type": "reasoning", "summary": [], "encrypted_content": "x"}})
    store.append({"type": "response_item", "item": fc("c1")})
    store.append({"type": "response_item", "item": fc("c2")})
    store.append({"type": "tool_output", "call_id": "c1", "name": "bash", "output": "one"})
    store.append({"type": "tool_output", "call_id": "c2", "name": "bash", "output": "two"})
    store.append({"type": "response_item", "item": msg("done")})
    store.append({"type": "pinned_skill", "name": "deploy", "content": "steps"})
    store.append({"type": "goal_context", "content": "Goal: ship"})
    store.append({"type": "branch", "label": "b"})
    store.append({"type": "proposed_plan", "id": "p", "title": "t", "markdown": "m", "status": "pending"})
    store.append({"type": "response_item", "item": fc("c3")})          # interrupted: no output
    items = request_items(store)
    assert items == [
        ut("hi"),
        {"type": "reasoning", "summary": [], "encrypted_content": "x"},
        fc("c1"), fc("c2"), fco("c1", "one"), fco("c2", "two"),
        msg("done"),
        ut("Pinned skill for future turns: deploy\n\nsteps"),
        ut("Goal: ship"),
    ]
    assert request_items(store) == items == store.request_items()      # deterministic


def test_sanitize_tool_pairs():
    items = [ut("u"), {"type": "reasoning", "summary": []}, fc("a"), {"type": "reasoning", "summary": []},
             fco("a"), fco("orphan"), {"type": "reasoning", "summary": []}, fc("nocall-output"),
             {"type": "reasoning", "summary": []}, msg("m"), {"type": "reasoning", "summary": []}]
    assert sanitize_tool_pairs(items) == [ut("u"), {"type": "reasoning", "summary": []}, fc("a"), fco("a"),
                                          {"type": "reasoning", "summary": []}, msg("m")]


def test_images_reread_and_placed_after_output_run(tmp_path, store):
    img = tmp_path / "shot.png"
    img.write_bytes(PNG)
    data_url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    store.append({"type": "user", "content": "see"})
    store.append({"type": "user_image", "paths": [str(img), str(tmp_path / "missing.png")]})
    store.append({"type": "response_item", "item": fc("c1", "read")})
    store.append({"type": "response_item", "item": fc("c2", "read")})
    store.append({"type": "tool_output", "call_id": "c1", "name": "read", "output": "img", "image": str(img)})
    store.append({"type": "tool_output", "call_id": "c2", "name": "read", "output": "txt"})
    store.append({"type": "response_item", "item": msg("nice")})
    items = request_items(store)
    part = {"type": "input_image", "image_url": data_url}
    assert items == [ut("see"), {"role": "user", "content": [part]}, fc("c1", "read"), fc("c2", "read"),
                     fco("c1", "img"), fco("c2", "txt"), {"role": "user", "content": [part]}, msg("nice")]
    img.unlink()                                   # a deleted image is skipped, not an error
    assert request_items(store)[1] == fc("c1", "read")


def test_compaction_summary_first(store):
    store.append({"type": "user", "content": "old"})
    store.append({"type": "response_item", "item": msg("old reply")})
    store.append({"type": "user", "content": "new"})
    store.append({"type": "compaction", "summary": "S", "replaced_through": 2})
    store.append({"type": "response_item", "item": msg("after")})
    assert request_items(store) == [
        ut("[Earlier conversation compacted to a summary for context efficiency]\n\nS"),
        ut("new"), msg("after")]


def test_context_stats_and_resume_source(store):
    from jucode.session import context_stats, resume_summary_source
    store.append({"type": "user", "content": "hi"})
    store.append({"type": "response_item", "item": fc("c1")})
    store.append({"type": "tool_output", "call_id": "c1", "name": "bash", "output": "x" * 400})
    store.append({"type": "response_item", "item": msg("done")})
    store.append({"type": "response_item", "item": fc("c2")})     # unpaired
    st = context_stats(store, lambda t: len(t) // 4)
    assert (st.branch_entries, st.context_items, st.projected_items, st.compacted) == (5, 5, 4, False)
    assert (st.users, st.assistant, st.tool_calls, st.tool_outputs) == (1, 1, 2, 1)
    lines = st.lines()
    assert lines[0] == "context: branch_entries=5 context_items=5 projected_items=4 compacted=false"
    assert lines[3].startswith("  function_call_output c1 ~")
    src = resume_summary_source(store, entries=2)
    assert src == "Assistant: done\n\nAssistant tool call bash: {}"
    assert len(resume_summary_source(store, limit=50)) == 50
