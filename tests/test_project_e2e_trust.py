"""Issue 9 end to end: trust, hooks, custom commands, skills and live reload on the real engine."""

from __future__ import annotations

import json
import time
from pathlib import Path

from fakeserver import request_input_texts


def _command_names(ev: dict) -> dict:
    return {c["command"]: c["marker"] for c in ev["commands"]}


def _untrusted_repo_with_hook(tmp_path: Path) -> tuple[Path, Path]:
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    (work / ".jucode").mkdir()
    marker = tmp_path / "hook-ran.txt"
    hooks = {"user_prompt_submit": [{"command": f"echo ran >> {marker}"}]}
    (work / ".jucode" / "hooks.json").write_text(json.dumps(hooks))
    (work / ".jucode" / "commands").mkdir()
    (work / ".jucode" / "commands" / "deploy.md").write_text("Deploy $ARGUMENTS now\n")
    return work, marker


def test_untrusted_repo_gets_trust_prompt_and_hook_waits_for_trust(tmp_path, server, engine):
    work, marker = _untrusted_repo_with_hook(tmp_path)
    eng = engine()
    tp = eng.wait_for("trust_prompt", timeout=5)
    assert tp["cwd"] == str(work.resolve())
    # project commands stay off while untrusted
    cl = [e for e in eng.events if e["type"] == "command_list"][-1]
    assert "/deploy" not in _command_names(cl)

    server.script({"text": "one"})
    m = eng.send({"op": "user_message", "content": "hi"})
    eng.wait_status("ready", start=m)
    assert not marker.exists()

    m = eng.send({"op": "command", "input": "/trust yes"})
    eng.wait_for(lambda e: e.get("type") == "status" and e["message"] == f"trusted {work.resolve()}", start=m)
    cl = eng.wait_for(lambda e: e.get("type") == "command_list" and "/deploy" in _command_names(e), start=m)
    assert _command_names(cl)["/deploy"] == "PROJ"

    server.script({"text": "two"})
    m = eng.send({"op": "user_message", "content": "again"})
    eng.wait_status("ready", start=m)
    assert marker.read_text().strip() == "ran"

    # /trust no is remembered in the profile dir; a new engine gets no prompt
    eng.send({"op": "command", "input": "/trust no"})
    eng.wait_for(lambda e: e.get("type") == "status" and e["message"].startswith("untrusted "))
    eng.close()
    trust = json.loads((eng.profile / "trust.json").read_text())
    assert trust["projects"][str(work.resolve())] is False
    eng2 = engine()
    assert not [e for e in eng2.events if e["type"] == "trust_prompt"]


def test_repo_cannot_change_approval_mode(tmp_path, server, engine):
    work = tmp_path / "work"
    (work / ".jucode").mkdir(parents=True)
    (work / ".jucode" / "config.json").write_text(json.dumps({"approval_mode": "full-access"}))
    (work / "config.json").write_text(json.dumps({"approval_mode": "full-access"}))
    eng = engine()
    assert eng.wait_for("approval_mode")["mode"] == "manual"


def test_custom_command_created_while_running_appears_and_expands(server, engine):
    eng = engine()
    cmds = eng.profile / "commands"
    cmds.mkdir(exist_ok=True)
    # the watcher starts after the startup batch; give it a moment to be in place by polling
    m = eng.mark()
    t0 = time.monotonic()
    (cmds / "review.md").write_text("---\ndescription: Review things\n---\nPlease review $ARGUMENTS carefully\n")
    cl = eng.wait_for(lambda e: e.get("type") == "command_list" and "/review" in _command_names(e),
                      start=m, timeout=5)
    assert time.monotonic() - t0 < 3
    # now that the watcher is surely running, a new file must show up within a second
    m = eng.mark()
    t0 = time.monotonic()
    (cmds / "second.md").write_text("Second command\n")
    eng.wait_for(lambda e: e.get("type") == "command_list" and "/second" in _command_names(e),
                 start=m, timeout=5)
    assert time.monotonic() - t0 < 1.0
    row = [c for c in cl["commands"] if c["command"] == "/review"][0]
    assert row["marker"] == "CMD" and row["description"] == "Review things" and row["args"] == "[args]"

    server.script({"text": "ok"})
    m = eng.send({"op": "command", "input": "/review src/app.py"})
    echo = eng.wait_for("user_message", start=m)
    assert echo["content"] == "/review src/app.py"
    eng.wait_status("ready", start=m)
    texts = request_input_texts(server.requests[-1])
    assert any("Please review src/app.py carefully" in t for t in texts)


def test_skill_command_and_read_root(tmp_path, server, engine):
    home = tmp_path / "home"
    sk = home / ".jucode" / "skills" / "pdf"
    sk.mkdir(parents=True)
    (sk / "SKILL.md").write_text("---\nname: pdf\ndescription: Work with PDF files\n---\nUse pdftotext.\n")
    (sk / "notes.txt").write_text("skill notes here\n")
    eng = engine()
    cl = [e for e in eng.events if e["type"] == "command_list"][-1]
    assert _command_names(cl)["/pdf"] == "SKILL"
    server.script({"tool_calls": [{"name": "read", "arguments": {"path": str(sk / "notes.txt")}}]},
                  {"text": "done"})
    m = eng.send({"op": "command", "input": "/pdf summarize a.pdf"})
    assert eng.wait_for("user_message", start=m)["content"] == "/pdf summarize a.pdf"
    out = eng.wait_for("tool_output", start=m)
    eng.wait_status("ready", start=m)
    assert not out["is_error"], out
    assert "skill notes here" in out["output"]
    first = server.requests[-2]
    assert any("Use the following skill instructions" in t and "User request:\nsummarize a.pdf" in t
               for t in request_input_texts(first))
    assert "<available_skills>" in first["body"]["instructions"]


def test_blocking_pre_tool_use_hook_stops_the_call(tmp_path, server, engine):
    home = tmp_path / "home"
    (home / ".jucode").mkdir(parents=True)
    hook = {"pre_tool_use": [{"command": "echo 'no shell today' >&2; exit 2", "tools": ["bash"]}]}
    (home / ".jucode" / "hooks.json").write_text(json.dumps(hook))
    target = tmp_path / "work" / "made.txt"
    eng = engine({"approval_mode": "full-access"})
    server.script({"tool_calls": [{"name": "bash", "arguments": {"command": f"touch {target}"}}]},
                  {"text": "ok"})
    m = eng.send({"op": "user_message", "content": "run it"})
    out = eng.wait_for("tool_output", start=m)
    eng.wait_status("ready", start=m)
    assert out["is_error"] is True
    assert json.loads(out["output"]) == {"error": "blocked by pre_tool_use hook: no shell today"}
    assert not target.exists()


def test_user_prompt_submit_block_and_stop_hook_info(tmp_path, server, engine):
    home = tmp_path / "home"
    (home / ".jucode").mkdir(parents=True)
    hooks = {"user_prompt_submit": [{"command": "grep -q forbidden && { echo 'not allowed' >&2; exit 1; }; exit 0"}],
             "stop": [{"command": "echo finished"}],
             "session_start": [{"command": "echo hello from hook"}]}
    (home / ".jucode" / "hooks.json").write_text(json.dumps(hooks))
    eng = engine()
    eng.wait_for(lambda e: e.get("type") == "info" and e["message"] == "hook (session_start): hello from hook")
    m = eng.send({"op": "user_message", "content": "this is forbidden"})
    err = eng.wait_for("error", start=m)
    assert err["message"] == "blocked by user_prompt_submit hook: not allowed"
    eng.wait_status("ready", start=m)
    assert not server.requests
    server.script({"text": "fine"})
    m = eng.send({"op": "user_message", "content": "hello"})
    eng.wait_status("ready", start=m)
    assert any(e.get("message") == "hook (stop): finished" for e in eng.since(m, "info"))
