"""Model metadata, effort rules, cost, protocol routing, credentials and the provider factory."""

from __future__ import annotations

import json

from jucode.llm.anthropic import AnthropicProvider
from jucode.llm.base import Usage
from jucode.llm.catalog import (context_limit, cost, effective_effort, effort_after_switch, lightest_effort,
                                next_effort, normalize_effort, resolve_model, resolve_protocol)
from jucode.llm.chat import ChatProvider
from jucode.llm.factory import make_provider, mask_secret, missing_key_message, resolve_credentials
from jucode.llm.responses import ResponsesProvider


def test_builtin_templates_and_unknown():
    m = resolve_model({}, "gpt-5.5")
    assert (m.context_window, m.max_output_tokens) == (272_000, 128_000)
    assert m.reasoning_efforts == ["none", "low", "medium", "high", "xhigh"]
    assert resolve_model({}, "gpt-5.3-codex").reasoning_efforts == ["low", "medium", "high", "xhigh"]
    assert resolve_model({}, "deepseek-v4-pro").context_window == 1_000_000
    assert resolve_model({}, "claude-sonnet-4-5-20250929").input_cost == 3.0
    u = resolve_model({}, "my-local-model")
    assert (u.context_window, u.max_output_tokens, u.known) == (0, 0, False)
    assert u.reasoning_efforts == ["none", "low", "medium", "high", "xhigh"]


def test_config_entries_override_and_claude_upgrade():
    cfg = {"models": [{"name": "gpt-5.5", "context_window": 100_000, "input_cost": 2, "output_cost": 8,
                       "cached_input_cost": 0.5, "display_name": "Five"},
                      {"name": "claude-x", "reasoning_efforts": ["none"], "max_output_tokens": 4096}],
           "context_window_overrides": {"gpt-5.5": 150_000}}
    m = resolve_model(cfg, "gpt-5.5")
    assert m.context_window == 150_000 and m.max_output_tokens == 128_000 and m.label == "Five"
    assert m.input_cost == 2.0
    c = resolve_model(cfg, "claude-x")
    assert c.reasoning_efforts == ["none", "low", "medium", "high"] and c.max_output_tokens == 32_000


def test_effort_rules():
    gpt = resolve_model({}, "gpt-5.5")
    codex = resolve_model({}, "gpt-5.3-codex")
    ds = resolve_model({}, "deepseek-v4-pro")
    assert effective_effort(gpt, "medium") == "medium"
    assert effective_effort(codex, "none") == "high"
    assert effective_effort(resolve_model({"models": [{"name": "x", "reasoning_efforts": ["a", "b", "c"]}]}, "x"), "z") == "b"
    assert normalize_effort(ds, "low") == "high"           # no medium -> first
    assert normalize_effort(gpt, "bogus") == "medium"
    assert effort_after_switch(codex, "xhigh") == "xhigh"
    assert effort_after_switch(codex, "none") == "medium"
    assert next_effort(gpt, "xhigh") == "none" and next_effort(gpt, "low") == "medium"
    assert lightest_effort(codex) == "low"


def test_context_limit_and_cost_with_cached_input():
    assert context_limit(272_000) == 204_000
    assert context_limit(200_000, 5) == 20_000 and context_limit(200_000, 99) == 190_000
    assert context_limit(0) == 0
    info = resolve_model({}, "gpt-5")   # 1.25 / 0.125 / 10 USD per 1M
    usage = Usage(input_tokens=1_000_000, cached_input_tokens=400_000, output_tokens=100_000)
    assert abs(cost(usage, info) - (0.6 * 1.25 + 0.4 * 0.125 + 0.1 * 10)) < 1e-9
    assert cost(usage, resolve_model({}, "unknown-model")) == 0.0


def test_protocol_resolution():
    assert resolve_protocol({"provider": "jucode", "protocol": "chat"}, "claude-sonnet-4-5") == "anthropic"
    assert resolve_protocol({"provider": "jucode", "protocol": "chat"}, "gpt-5.5") == "responses"
    assert resolve_protocol({"provider": "deepseek"}, "deepseek-v4-pro") == "anthropic"
    assert resolve_protocol({"provider": "fake", "protocol": "chat"}, "anything") == "chat"
    assert resolve_protocol({"provider": "openai", "protocol": ""}, "claude-opus-4-5") == "anthropic"
    assert resolve_protocol({}, "gpt-4o") == "responses"
    assert resolve_protocol({"protocol": "azure"}, "gpt-4o") == "azure"


def test_credentials(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("MY_KEY", raising=False)
    assert resolve_credentials({"provider": "openai"}, tmp_path) == (None, "https://api.openai.com/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/")
    assert resolve_credentials({}, tmp_path) == ("sk-env", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("MY_KEY", "k-custom")
    assert resolve_credentials({"api_key_env": "MY_KEY", "base_url": "https://api.jucode.cn/v1/"}, tmp_path) == \
        ("k-custom", "https://api.jucode.net/v1")
    assert resolve_credentials({"api_key_env": "sk-pasted"}, tmp_path)[0] == "sk-pasted"
    (tmp_path / "auth.json").write_text(json.dumps({"providers": {"deepseek": "ds-key"}}))
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert resolve_credentials({"provider": "deepseek"}, tmp_path) == ("ds-key", "https://api.deepseek.com/anthropic")
    assert missing_key_message({"api_key_env": "MY_KEY"}) == \
        "api_key is not set and MY_KEY is not set. Configure one before sending prompts."
    assert mask_secret("sk-1234567890abcd") == "sk-1…abcd" and mask_secret("") == ""


def test_factory_picks_wire_api():
    assert isinstance(make_provider({"provider": "fake", "protocol": "chat"}, "m", "k", "http://h/v1"), ChatProvider)
    p = make_provider({"provider": "jucode", "jucode_groups": {"claude-opus-4-5": "g1"}}, "claude-opus-4-5", "k",
                      "https://api.jucode.net/v1")
    assert isinstance(p, AnthropicProvider) and p.url == "https://api.jucode.net/v1/messages"
    assert p.headers("")["X-JuCode-Group"] == "g1"
    r = make_provider({"protocol": "codex"}, "gpt-5.5-x", "k", "https://chatgpt.test/backend-api")
    assert isinstance(r, ResponsesProvider) and r.url == "https://chatgpt.test/backend-api/codex/responses"


def test_chatgpt_account_id_comes_from_the_jwt_claim_only():
    import base64
    import json

    from jucode.llm.responses import chatgpt_account_id

    def jwt(claims):
        enc = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
        return f"eyJhbGciOiJub25lIn0.{enc}.sig"
    assert chatgpt_account_id(jwt({"https://api.openai.com/auth": {"chatgpt_account_id": "a-1"}})) == "a-1"
    assert chatgpt_account_id(jwt({"chatgpt_account_id": "top"})) == "top"
    assert chatgpt_account_id(jwt({"sub": "x"})) == ""
    for key in (None, "", "sk-plain-key", "a.b.c", "a.!!!.c", jwt(["list"])):
        assert chatgpt_account_id(key) == ""
    r = make_provider({"protocol": "codex"}, "my-codex-model", jwt({"chatgpt_account_id": "z"}), "https://c.test/backend-api")
    assert r.account_id == "z"
    assert make_provider({}, "gpt-5.5", jwt({"chatgpt_account_id": "z"}), "https://c.test/v1").account_id == ""
