"""Unusable config.json values are reported once at startup in upstream's words, and the
engine still starts with a safe fallback (reference §10.2, §4.6)."""

import pytest

from jucode.config_checks import config_problems


def test_problems_texts():
    assert config_problems({"approval_mode": "bogus", "edit_tools": "write", "protocol": "smoke"}) == [
        "invalid approval_mode in config.json: unknown approval mode 'bogus': use manual, auto-edit, auto, "
        "full-access, or plan",
        "invalid edit_tools in config.json: expected an array of tool names",
        'invalid protocol in config.json: "smoke" (want one of responses, codex, azure, anthropic, chat)']
    assert config_problems({"edit_tools": ["nope"]}) == [
        "invalid edit_tools entry 'nope' in config.json: use hashline_edit, str_replace (alias edit), write, "
        "or apply_patch"]
    assert config_problems({"approval_mode": "full-auto", "edit_tools": ["edit"], "protocol": ""}) == []
    assert config_problems({}) == []
    assert config_problems({"encrypt_secrets": True})[0].startswith("encrypt_secrets is not supported")
    assert config_problems({"encrypt_secrets": False}) == []


@pytest.mark.parametrize("cfg", [{"approval_mode": "bogus"}, {"edit_tools": ["nope"]}, {"protocol": "smoke"}])
def test_startup_reports_each_once_and_keeps_serving(engine, cfg):
    eng = engine(cfg)
    eng.wait_for("error")
    m = eng.send({"op": "agent_runs"})          # a sentinel: everything of the startup is out by its answer
    eng.wait_for("agent_runs", start=m)
    errs = [e["message"] for e in eng.events if e.get("type") == "error"]
    assert len(errs) == 1 and "in config.json" in errs[0], errs
    mode = [e for e in eng.events if e.get("type") == "approval_mode"][0]["mode"]
    assert mode == "manual"


def test_invalid_stored_effort_becomes_medium(engine, server):
    eng = engine({"model": "gpt-5.3-codex", "reasoning_effort": "bogus"})
    ms = [e for e in eng.events if e.get("type") == "model_status"][0]
    assert ms["reasoning_effort"] == "medium"
    server.script({"text": "ok"})
    m = eng.send({"op": "user_message", "content": "q"})
    eng.wait_status("ready", start=m, timeout=15)
    assert server.requests[-1]["body"]["reasoning"]["effort"] == "medium"
