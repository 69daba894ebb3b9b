"""Resume-summary helpers: what the light model sees and how its answer is read back."""

from __future__ import annotations

from jucode.session import SessionStore
from jucode.session.resume_summary import idle_seconds, parse_summary, render_recent

CWD = "/work/resume/project"


def user(text):
    return {"type": "user", "content": text}


def say(text):
    return {"type": "response_item", "item": {"type": "message", "role": "assistant",
                                              "content": [{"type": "output_text", "text": text}]}}


def test_render_recent_keeps_the_last_six_blocks_and_the_tail(tmp_path):
    store = SessionStore.create(tmp_path, CWD)
    try:
        for i in range(5):
            store.append(user(f"question {i}"))
            store.append(say(f"answer {i}"))
        store.append({"type": "tool_output", "call_id": "c1", "name": "bash", "output": "ok"})
        text = render_recent(store.active_path())
        blocks = text.split("\n\n")
        assert len(blocks) == 6 and blocks[0] == "Assistant: answer 2" and blocks[-1] == "Tool bash output: ok"
        store.append(user("x" * 5000))
        capped = render_recent(store.active_path())
        assert len(capped) == 4000 and capped.endswith("x" * 100)   # the newest text survives the cap
    finally:
        store.close()


def test_parse_summary_prefixes():
    assert parse_summary("Working: fixing the\n parser tests.") == ("fixing the parser tests.", "working")
    assert parse_summary("completed: shipped it") == ("shipped it", "completed")
    assert parse_summary("Refactored the loader.") == ("Refactored the loader.", "working")
    assert parse_summary("   ") is None and parse_summary("Completed:") is None


def test_idle_threshold_env(monkeypatch):
    monkeypatch.delenv("JUCODE_RESUME_SUMMARY_IDLE_SECONDS", raising=False)
    assert idle_seconds() == 300.0
    monkeypatch.setenv("JUCODE_RESUME_SUMMARY_IDLE_SECONDS", "0.5")
    assert idle_seconds() == 0.5
    monkeypatch.setenv("JUCODE_RESUME_SUMMARY_IDLE_SECONDS", "soon")
    assert idle_seconds() == 300.0
