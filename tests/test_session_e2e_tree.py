"""Session tree commands through the real engine subprocess: checkout + new message forks,
/tree shows the fork, /rewind restores files, /new starts empty, refusals while running."""

from __future__ import annotations

import pytest

from fakeserver import request_input_texts
from harness import run_turn as turn

CONFIG = {"edit_tools": ["write", "str_replace"], "retry_attempts": 0}


@pytest.fixture
def eng(engine):
    return engine(CONFIG)


def command(eng, text: str, until: str = "status") -> tuple[int, dict]:
    m = eng.send({"op": "command", "input": text})
    ev = eng.wait_for(lambda e: e.get("type") in (until, "error"), start=m, timeout=10)
    return m, ev


def test_command_list_has_session_commands(eng):
    listed = {c["command"] for c in eng.wait_for("command_list")["commands"]}
    assert {"/new", "/resume", "/tree", "/rewind", "/compact", "/transcript"} <= listed
    assert not {"/checkout", "/fork", "/delete"} & listed          # advanced upstream


def test_checkout_then_new_message_forks_in_tree_view(eng, server):
    server.script({"text": "answer one"}, {"text": "answer two"}, {"text": "answer two bis"})
    turn(eng, "first question")
    turn(eng, "second question")
    m, ev = command(eng, "/checkout e3")
    assert ev == {"type": "status", "message": "checked out e3", "session": ev["session"]}
    assert eng.since(m, "fill_input")[0]["content"] == "second question"
    assert [i["content"] for i in eng.since(m, "transcript")[0]["items"]] == ["first question", "answer one"]
    turn(eng, "second question, edited")
    texts = request_input_texts(server.requests[-1])
    assert "first question" in texts and "second question, edited" in texts
    assert "second question" not in texts and "answer two" not in " ".join(texts)
    _, view = command(eng, "/tree", until="tree_view")
    nodes = {n["id"]: n for n in view["nodes"]}
    assert nodes["e1"] == {"id": "e1", "parent_id": None, "label": "first question", "active": True}
    assert nodes["e3"]["parent_id"] == "e1" and nodes["e3"]["active"] is False
    assert nodes["e5"] == {"id": "e5", "parent_id": "e1", "label": "second question, edited", "active": True}
    # labels: fork, checkout by label, errors with upstream texts
    _, ev = command(eng, "/fork alt")
    assert ev["message"] == "forked alt: e7"
    _, ev = command(eng, "/fork alt")
    assert ev == {"type": "error", "message": "branch already exists: alt", "session": ev["session"]}
    _, ev = command(eng, "/checkout e2")
    assert ev["message"] == "entry e2 is not a user node"
    _, ev = command(eng, "/checkout nope")
    assert ev["message"] == "branch not found: nope"
    _, ev = command(eng, "/delete root")
    assert ev["message"] == "cannot delete root branch"
    _, ev = command(eng, "/delete alt")
    assert ev["message"] == "deleted branch alt"


def test_rewind_restores_file_edited_after_the_rewind_point(eng, server):
    target = eng.cwd / "notes.txt"
    target.write_text("original\n")
    eng.send({"op": "set_approval_mode", "mode": "full-access"})
    server.script({"text": "hello"},
                  {"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}, "call_id": "c1"}]},
                  {"tool_calls": [{"name": "write", "arguments": {"path": "notes.txt", "content": "changed\n"},
                                   "call_id": "c2"}]},
                  {"text": "edited"})
    turn(eng, "say hello")
    m = turn(eng, "edit the notes")
    assert [e["is_error"] for e in eng.since(m, "tool_output")] == [False, False]
    assert target.read_text() == "changed\n"
    _, view = command(eng, "/rewind", until="checkpoint_view")
    assert [i["id"] for i in view["items"]] == ["e1", "e3"]
    assert [i["label"] for i in view["items"]] == ["say hello", "edit the notes"]
    assert all(i["detail"].endswith("s ago") for i in view["items"])
    m, ev = command(eng, "/undo e3")
    assert ev["message"] == "checked out e3"
    assert {"type": "info", "message": "rewound · restored 1 file(s), removed 0"}.items() <= \
        eng.since(m, "info")[0].items()
    assert eng.since(m, "fill_input")[0]["content"] == "edit the notes"
    assert target.read_text() == "original\n"
    _, ev = command(eng, "/rewind e2")
    assert ev["message"] == "that is not a rewindable turn"


def test_new_session_and_refusals_while_running(eng, server):
    server.script({"text": "slow answer", "stall": 30})
    m = eng.send({"op": "user_message", "content": "take your time"})
    eng.wait_for("assistant_delta", start=m)
    for cmd, verb in (("/new", "start a new session"), ("/rewind e1", "rewind"), ("/compact", "compact"),
                      ("/checkout e1", "checkout")):
        _, ev = command(eng, cmd, until="error")
        assert ev["message"] == f"cannot {verb} while a response is running"
    m = eng.send({"op": "interrupt"})
    eng.wait_status("interrupted", start=m)
    old = eng.since(0, "startup")[0]["session_id"]
    m, ev = command(eng, "/new")
    assert ev["message"].startswith("new session s") and old not in ev["message"]
    assert eng.since(m, "transcript")[0]["items"] == []
    assert eng.since(m, "pending_messages")[0]["messages"] == []
    assert eng.since(m, "context_usage") and eng.since(m, "model_status")
    _, view = command(eng, "/tree", until="tree_view")
    assert view["nodes"] == []
