"""The palette's account commands through the real engine: /login (bring your own key),
/login-paste, /usage, /subagents and /sandbox (front-end notes §13)."""

from __future__ import annotations

import json
import os
import stat

from harness import run_command

NEW_KEY = "sk-login-new-key-0123456789abcdef"


def _errors(eng, text):
    ev, _ = run_command(eng, text, "error")
    return ev["message"]


def test_login_picker_lists_every_provider(engine):
    eng = engine()
    picker, _ = run_command(eng, "/login", "login_picker")
    rows = {p["id"]: p for p in picker["providers"]}
    assert [p["id"] for p in picker["providers"]][0] == "jucode"
    assert set(rows) == {"jucode", "openai", "deepseek", "ollama", "openrouter", "anthropic"}
    assert rows["openai"]["active"] and not rows["anthropic"]["active"]
    assert (rows["openai"]["wants_key"], rows["ollama"]["wants_key"], rows["jucode"]["wants_key"]) == (True, False, False)
    assert rows["openai"]["label"] == "OpenAI" and "no key stored" in rows["openai"]["detail"]
    listed, m = run_command(eng, "/login list", "info")
    assert listed["message"].startswith("  jucode (JuCode)")
    eng.wait_for(lambda e: e.get("type") == "info" and e["message"].startswith("* openai (OpenAI)"), start=m)


def test_login_stores_the_key_privately_and_the_next_turn_uses_it(engine, server):
    eng = engine(env={"JUCODE_LOG": "debug"})
    auth = eng.profile / "auth.json"
    auth.write_text(json.dumps({"mcp_servers": {"s": {"access_token": "keep-me"}}}))
    status, m = run_command(eng, f"/login openai {NEW_KEY}")
    assert status["message"] == f"logged in to OpenAI (key sk-…{NEW_KEY[-4:]})"
    data = json.loads(auth.read_text())
    assert data["providers"]["openai"] == NEW_KEY
    assert data["mcp_servers"]["s"]["access_token"] == "keep-me"         # other sections survive
    assert stat.S_IMODE(os.stat(auth).st_mode) == 0o600
    picker, _ = run_command(eng, "/login", "login_picker")
    row = [p for p in picker["providers"] if p["id"] == "openai"][0]
    assert f"key sk-…{NEW_KEY[-4:]}" in row["detail"]
    server.script({"text": "hi"})
    m = eng.send({"op": "user_message", "content": "hello"})
    eng.wait_status("ready", start=m, timeout=15)
    assert server.requests[-1]["headers"]["authorization"] == f"Bearer {NEW_KEY}"
    eng.close()
    secret = NEW_KEY[4:-4].encode()
    assert secret not in b"".join(eng.raw_lines)
    assert NEW_KEY not in eng.stderr_text()
    for p in eng.profile.rglob("*"):
        if p.is_file() and p.name != "auth.json":
            assert secret not in p.read_bytes(), p


def test_login_to_another_provider_switches_endpoint_protocol_and_model(engine):
    eng = engine()
    status, m = run_command(eng, "/login openrouter sk-or-test-key-99887766")
    assert status["message"] == "logged in to OpenRouter (key sk-…7766)"
    cfg = json.loads((eng.profile / "config.json").read_text())
    assert (cfg["provider"], cfg["base_url"], cfg["protocol"], cfg["model"]) == \
        ("openrouter", "https://openrouter.ai/api/v1", "chat", "openai/gpt-5.5")
    ms = eng.wait_for(lambda e: e.get("type") == "model_status" and e.get("provider") == "openrouter", start=m)
    assert ms["model"] == "openai/gpt-5.5" and "api_key" not in ms      # present only when missing
    status, _ = run_command(eng, "/login ollama")
    assert status["message"] == "logged in to Ollama"
    cfg = json.loads((eng.profile / "config.json").read_text())
    assert (cfg["provider"], cfg["protocol"], cfg["model"]) == ("ollama", "chat", "qwen3-coder:30b")


def test_login_errors(engine):
    eng = engine()
    assert _errors(eng, "/login nosuch") == \
        "unknown provider: nosuch (known: jucode, openai, deepseek, ollama, openrouter, anthropic)"
    assert "JuCode gateway's browser flow" in _errors(eng, "/login jucode")
    assert "JuCode gateway" in _errors(eng, "/login https://web.example https://api.example")
    assert _errors(eng, "/login ollama some-key") == "Ollama takes no API key: /login ollama"
    assert _errors(eng, "/login anthropic") == "Anthropic needs an API key: /login anthropic <api-key>"
    assert _errors(eng, "/login openai a b") == "usage: /login <provider> <api-key>"
    assert "no sign-in is waiting" in _errors(eng, "/login-paste https://cb.example/?code=1")
    assert not (eng.profile / "auth.json").exists()
    assert json.loads((eng.profile / "config.json").read_text())["provider"] == "openai"


def test_subagents_usage_and_sandbox(engine):
    eng = engine()
    info, _ = run_command(eng, "/subagents", "info")
    assert info["message"].startswith("subagent models: none")
    status, _ = run_command(eng, "/subagents add gpt-5.4-mini quick searches and reads")
    assert status["message"] == "subagent model gpt-5.4-mini added"
    run_command(eng, "/subagents add gpt-5.4-mini cheap lookups")            # replaces, no duplicate
    cfg = json.loads((eng.profile / "config.json").read_text())
    assert cfg["subagent_models"] == [{"name": "gpt-5.4-mini", "description": "cheap lookups"}]
    info, _ = run_command(eng, "/subagents", "info")
    assert info["message"] == "subagent model gpt-5.4-mini: cheap lookups"
    assert _errors(eng, "/subagents remove other") == "no subagent model other"
    assert _errors(eng, "/subagents add lonely").startswith("usage: /subagents")
    status, _ = run_command(eng, "/subagents remove gpt-5.4-mini")
    assert status["message"] == "subagent model gpt-5.4-mini removed"
    assert json.loads((eng.profile / "config.json").read_text())["subagent_models"] == []
    usage, _ = run_command(eng, "/usage", "info")
    assert usage["message"] == "session cost: $0.0000 (openai, gpt-test)"
    sandbox, _ = run_command(eng, "/sandbox", "info")
    assert sandbox["message"].startswith("sandbox: none")
    assert _errors(eng, "/sandbox read-only").startswith("sandboxing is not available in this engine")


def test_palette_order_and_config_line(engine):
    eng = engine()
    listed = [c["command"] for c in [e for e in eng.events if e.get("type") == "command_list"][0]["commands"]]
    assert listed[:8] == ["/help", "/login", "/usage", "/new", "/model", "/effort", "/subagents", "/tree"]
    assert listed.index("/mcp") < listed.index("/quit")
    info, _ = run_command(eng, "/config", "info")
    assert " jucode_web_url=https://api.jucode.net jucode_api_url=https://api.jucode.net auth_key=sk-…" \
        in info["message"]
