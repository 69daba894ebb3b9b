"""Issue 9 end to end: instructions in the prompt, chat mode, goals and plans, live config, idle CPU."""

from __future__ import annotations

import json
import os
import time

import pytest

from fakeserver import request_input_texts


def _tool_names(body: dict) -> list:
    return [t.get("name") or t.get("type") for t in body.get("tools") or []]


def test_agents_md_in_instructions_for_a_normal_session(tmp_path, server, engine):
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    (work / "AGENTS.md").write_text("Always answer in haiku.\n")
    eng = engine({"include_project_instructions": True})
    server.script({"text": "ok"})
    m = eng.send({"op": "user_message", "content": "hi"})
    eng.wait_status("ready", start=m)
    instr = server.requests[-1]["body"]["instructions"]
    assert "Always answer in haiku." in instr
    assert f'<project_instructions path="{(work / "AGENTS.md").resolve()}">' in instr
    assert f"Current working directory: {work.resolve()}" in instr
    assert "web_search" not in _tool_names(server.requests[-1]["body"])
    # editing AGENTS.md takes effect on the next turn without a restart
    (work / "AGENTS.md").write_text("Answer in limericks.\n")
    server.script({"text": "ok"})
    m = eng.send({"op": "user_message", "content": "again"})
    eng.wait_status("ready", start=m)
    assert "Answer in limericks." in server.requests[-1]["body"]["instructions"]


def test_chat_mode_starts_in_chats_dir_without_project_instructions(tmp_path, server, engine):
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    (work / "AGENTS.md").write_text("PROJECT-SECRET-RULES\n")
    eng = engine({"include_project_instructions": True, "protocol": "responses",
                  "approval_mode": "full-access"}, args=("serve", "--chat"), wait=False)
    start = eng.wait_for("startup", timeout=15)
    chats = (eng.profile / "chats").resolve()
    assert start["cwd"] == str(chats)
    eng.wait_startup()
    assert not [e for e in eng.events if e["type"] == "trust_prompt"]
    # web_fetch keeps its rules in chat sessions: no file URLs, no embedded credentials
    server.script({"tool_calls": [{"name": "web_fetch", "arguments": {"url": "file:///etc/passwd"}},
                                  {"name": "web_fetch", "arguments": {"url": "http://u:p@127.0.0.1:9/"}}]},
                  {"text": "hello"})
    m = eng.send({"op": "user_message", "content": "what is new in python?"})
    eng.wait_status("ready", start=m)
    errors = sorted(json.loads(e["output"])["error"] for e in eng.since(m, "tool_output"))
    assert errors == ["URLs with embedded credentials are not supported",
                      "only http:// and https:// URLs are supported"]
    body = server.requests[0]["body"]
    assert "PROJECT-SECRET-RULES" not in body["instructions"]
    assert "general-purpose assistant" in body["instructions"]
    names = _tool_names(body)
    assert "web_fetch" in names
    assert {"type": "web_search"} in body["tools"]          # the provider's hosted search


def test_chat_mode_on_chat_wire_has_no_web_search_and_doctor_says_why(server, engine):
    eng = engine({"protocol": "chat"}, args=("serve", "--chat"), wait=False)
    eng.wait_startup()
    server.script({"text": "hello"})
    m = eng.send({"op": "user_message", "content": "hi"})
    eng.wait_status("ready", start=m)
    body = server.requests[-1]["body"]
    names = [t.get("function", t).get("name") for t in body.get("tools") or []]
    assert "web_fetch" in names and "web_search" not in names
    m = eng.send({"op": "command", "input": "/doctor"})
    line = eng.wait_for(lambda e: e.get("type") == "info" and e["message"].startswith("web_search:"), start=m)
    assert "not offered" in line["message"] and "web_search_url" in line["message"]


def test_goal_with_token_budget_ends_budget_limited(server, engine):
    eng = engine()
    server.script({"tool_calls": [{"name": "create_goal",
                                   "arguments": {"objective": "ship it", "token_budget": 50}}],
                   "usage": {"input": 100, "output": 10}},
                  {"text": "working on it", "usage": {"input": 30, "output": 5}})
    m = eng.send({"op": "user_message", "content": "set a goal"})
    first = eng.wait_for("goal", start=m)
    assert first["goal"]["status"] == "active" and first["goal"]["token_budget"] == 50
    out = eng.wait_for("tool_output", start=m)
    assert json.loads(out["output"])["goal"]["tokenBudget"] == 50
    eng.wait_status("ready", start=m)
    goals = eng.since(m, "goal")
    assert goals[-1]["goal"]["status"] == "budget_limited"
    assert goals[-1]["goal"]["tokens_used"] == 145
    assert "create_goal" in _tool_names(server.requests[0]["body"])
    # a budget-limited goal does not continue on its own
    n = len(server.requests)
    m = eng.send({"op": "command", "input": "/goal"})
    eng.wait_for("goal", start=m)
    assert len(server.requests) == n
    assert not [e for e in eng.since(0, "info") if e["message"].startswith("Continuing goal:")]


def test_goal_continuation_runs_while_idle_until_complete(server, engine):
    eng = engine()
    server.script({"tool_calls": [{"name": "update_plan", "arguments": {"plan": [
                      {"step": "write code", "status": "in_progress"}, {"step": "  ", "status": "x"},
                      {"step": "test", "status": "todo"}]}}]},
                  {"tool_calls": [{"name": "update_goal", "arguments": {"status": "complete"}}]},
                  {"text": "done"})
    m = eng.send({"op": "command", "input": "/goal make tests pass"})
    eng.wait_for(lambda e: e.get("type") == "info" and e["message"] == "Continuing goal: make tests pass", start=m)
    plan = eng.wait_for("plan", start=m)
    assert plan["plan"] == [{"step": "write code", "status": "in_progress"}, {"step": "test", "status": "pending"}]
    eng.wait_for(lambda e: e.get("type") == "goal" and e["goal"] and e["goal"]["status"] == "complete", start=m,
                 timeout=15)
    eng.wait_status("ready", start=m)
    assert any("<goal_context>" in t for t in request_input_texts(server.requests[0]))
    # the session file keeps the goal
    sessions = list((eng.profile / "sessions").rglob("*.json*"))
    assert any('"complete"' in p.read_text(errors="replace") for p in sessions if p.is_file())


def test_config_json_reloads_live(server, engine):
    eng = engine()
    cfg_path = eng.profile / "config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["web_search_url"] = "http://127.0.0.1:9/search"
    cfg_path.write_text(json.dumps(cfg))
    deadline = time.monotonic() + 5
    while True:
        m2 = eng.send({"op": "command", "input": "/doctor"})
        line = eng.wait_for(lambda e: e.get("type") == "info" and e["message"].startswith("web_search:"), start=m2)
        if "search endpoint" in line["message"] or time.monotonic() > deadline:
            break
        time.sleep(0.1)   # poll interval between /doctor probes
    assert "search endpoint http://127.0.0.1:9/search" in line["message"]


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="linux /proc only")
def test_idle_cpu_with_watcher_running(server, engine):
    eng = engine()
    pid = eng.proc.pid

    def cpu_seconds() -> float:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    # let startup work (watch setup, background imports) settle: wait until a 1 s window is quiet
    deadline = time.monotonic() + 10
    while True:
        a = cpu_seconds()
        time.sleep(1.0)
        if cpu_seconds() - a <= 0.02 or time.monotonic() > deadline:
            break
    before = cpu_seconds()
    t0 = time.monotonic()
    time.sleep(3.0)
    used = cpu_seconds() - before
    assert used / (time.monotonic() - t0) <= 0.01, f"idle CPU {used:.3f}s over 3s"
