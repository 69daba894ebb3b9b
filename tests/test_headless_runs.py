"""``jucode --headless``: the real engine as a subprocess against the scripted model server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
ENTRY = ROOT / "jucode.py"


def run_headless(tmp: Path, server, args, stdin: str = "", api_key: str | None = "sk-test-key-123456",
                 config: dict | None = None):
    home = tmp / "home"
    profile = home / ".jucode"
    work = tmp / "work"
    profile.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    cfg = {"provider": "openai", "model": "gpt-test", "retry_attempts": 0, "include_project_instructions": False}
    cfg.update(config or {})
    (profile / "config.json").write_text(json.dumps(cfg))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "JUCODE_", "ANTHROPIC_"))}
    env.update({"HOME": str(home), "JUCODE_HOME": str(profile), "JUCODE_RETRY_BASE_MS": "20"})
    if api_key:
        env["OPENAI_API_KEY"] = api_key
    if server is not None:
        env["OPENAI_BASE_URL"] = server.base_url
    p = subprocess.run([sys.executable, str(ENTRY), "--headless", *args], input=stdin.encode(), cwd=str(work),
                       env=env, capture_output=True, timeout=60)
    lines = p.stdout.decode().splitlines()
    events = [json.loads(line) for line in lines]        # every line must be one JSON object
    return p.returncode, events, p.stderr.decode()


def test_tool_call_full_auto_ends_with_final_result(tmp_path, server):
    server.script({"reasoning": "plan", "tool_calls": [{"name": "bash", "arguments": {"command": "echo hi-there"}}],
                   "usage": {"input": 120, "cached": 20, "output": 11, "reasoning": 3}},
                  {"text": "all done", "usage": {"input": 200, "cached": 100, "output": 5, "reasoning": 0}})
    code, events, err = run_headless(tmp_path, server, ["--full-auto", "run", "echo"])
    assert code == 0, err
    types = [e["type"] for e in events]
    assert events[0] == {"type": "status", "message": "approval mode: full-access"}
    assert events[1] == {"type": "approval_mode", "mode": "full-access"}
    assert "hello" not in types and "startup" not in types
    assert all("session" not in e for e in events)
    assert events[2] == {"type": "user_message", "content": "run echo"}
    out = next(e for e in events if e["type"] == "tool_output")
    assert "hi-there" in out["output"] and out["is_error"] is False
    final = events[-1]
    assert final["type"] == "final_result" and types.count("final_result") == 1
    assert final["status"] == "ready" and final["last_error"] is None
    assert final["approval_mode"] == "full-access" and final["denied_approvals"] == 0
    assert (final["input_tokens"], final["cached_input_tokens"], final["output_tokens"],
            final["reasoning_tokens"]) == (320, 120, 16, 3)
    assert final["tool_calls"] == 1 and final["subagent_events"] == 0
    assert final["assistant_chars"] == len("plan") + len("all done")
    assert final["last_context_state"] == "ready"
    last_ctx = [e for e in events if e["type"] == "context_usage"][-1]
    assert final["context_tokens"] == last_ctx["tokens"] and final["context_tokenizer"] == last_ctx["tokenizer"]
    counts = final["event_counts"]
    assert list(counts) == sorted(counts) and counts["tool_start"] == 1 and counts["status"] == types.count("status")
    assert isinstance(final["elapsed_ms"], int) and final["elapsed_ms"] >= 0
    assert set(final) - {"type"} <= set(__import__("jucode.events", fromlist=["x"]).EVENT_FIELDS["final_result"])


def test_manual_mode_auto_denies_and_reads_stdin(tmp_path, server):
    server.script({"tool_calls": [{"name": "bash", "arguments": {"command": "touch nope"}, "call_id": "call_9"}]},
                  {"text": "ok, not running it"})
    code, events, err = run_headless(tmp_path, server, [], stdin="do the thing\n")
    assert code == 0, err
    assert events[0]["message"] == "approval mode: manual"
    assert next(e for e in events if e["type"] == "user_message")["content"].strip() == "do the thing"
    types = [e["type"] for e in events]
    i = types.index("approval_request")
    assert events[i + 1] == {"type": "info", "message": (
        "auto-denying bash (call_9): approvals cannot be answered in --headless mode; rerun with "
        "--approval-mode auto, auto-edit, or full-access to allow this class of tools")}
    out = next(e for e in events if e["type"] == "tool_output")
    assert out["is_error"] and "denied by user" in out["output"]
    assert not (tmp_path / "work" / "nope").exists()
    assert events[-1]["denied_approvals"] == 1 and events[-1]["status"] == "ready"


def test_failing_model_exits_nonzero(tmp_path, server):
    server.script({"status": 400, "body": {"error": {"message": "bad request: nope", "type": "invalid_request_error"}}})
    code, events, err = run_headless(tmp_path, server, ["hi"])
    assert code == 1, err
    final = events[-1]
    assert final["type"] == "final_result" and final["status"] == "error"
    assert final["last_error"] and final["last_error"] == [e for e in events if e["type"] == "error"][-1]["message"]


def test_missing_key_is_an_error(tmp_path):
    code, events, _ = run_headless(tmp_path, None, ["hi"], api_key=None)
    assert code == 1
    assert "not set" in events[-1]["last_error"]


def test_replay_demo_needs_no_key(tmp_path):
    code, events, err = run_headless(tmp_path, None, ["--demo", "--full-auto", "show", "me"], api_key=None)
    assert code == 0, err
    types = {e["type"] for e in events}
    assert {"reasoning_delta", "assistant_delta", "tool_start", "tool_output"} <= types
    assert events[-1]["tool_calls"] >= 2 and events[-1]["last_error"] is None


def test_no_command_list_in_headless_output(tmp_path, server):
    """Headless output has no command palette: the project watcher's first reload (which runs
    mid-turn, the startup batch being skipped) must not print a command_list."""
    server.script({"tool_calls": [{"name": "bash", "arguments": {"command": "echo hi"}}]}, {"text": "done"})
    code, events, err = run_headless(tmp_path, server, ["--full-auto", "go"])
    assert code == 0, err
    assert "command_list" not in [e["type"] for e in events]
    assert "command_list" not in events[-1]["event_counts"]
