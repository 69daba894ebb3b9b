"""Choosing a provider and its credentials from config, environment and ``auth.json``.

Why separate: the engine, subagents and helper models (compaction, title, safety) all build
providers; they must resolve protocol, base URL and key identically, and error texts about a
missing key must match upstream's.
"""

from __future__ import annotations

import os
from typing import Optional, Tuple

from jucode.llm.base import Provider
from jucode.llm.catalog import PROVIDERS, resolve_protocol

DEFAULT_BASE_URL = "https://api.openai.com/v1"


def _data(config) -> dict:
    """Accept a plain dict or jucode.config.Config (its ``data``)."""
    if config is None:
        return {}
    if isinstance(config, dict):
        return config
    return getattr(config, "data", {}) or {}


def mask_secret(secret: Optional[str]) -> str:
    """``sk-a…wxyz`` style: enough to recognise a key, never enough to use it."""
    if not secret:
        return ""
    s = str(secret)
    if len(s) <= 8:
        return "*" * len(s)
    return f"{s[:4]}…{s[-4:]}"


def normalize_base_url(url: str) -> str:
    url = (url or "").strip().rstrip("/")
    return url.replace("://api.jucode.cn", "://api.jucode.net")


def _read_auth(profile_dir) -> dict:
    if profile_dir is None:
        try:
            from jucode.config import profile_dir as _pd

            profile_dir = _pd()
        except Exception:
            return {}
    from jucode.auth_file import read_auth

    return read_auth(profile_dir)


def api_key_env_name(config) -> str:
    name = str(_data(config).get("api_key_env") or "OPENAI_API_KEY").strip()
    return name or "OPENAI_API_KEY"


def missing_key_message(config) -> str:
    return f"api_key is not set and {api_key_env_name(config)} is not set. Configure one before sending prompts."


def resolve_credentials(config, profile_dir=None) -> Tuple[Optional[str], str]:
    """``(api_key or None, base_url)``.

    Key: ``auth.json`` ``providers[<provider>]`` (or the JuCode access token for provider
    ``jucode``), then a config ``api_key``, then ``api_key_env`` (a value that looks like a pasted
    ``sk-`` key is used as the key itself), then ``OPENAI_API_KEY``. Base URL: config
    ``base_url`` (legacy ``jucode_base_url``), then ``OPENAI_BASE_URL``, then the provider default.
    """
    cfg = _data(config)
    provider = str(cfg.get("provider") or "openai")
    auth = _read_auth(profile_dir)
    key: Optional[str] = None
    stored = (auth.get("providers") or {}) if isinstance(auth.get("providers"), dict) else {}
    if isinstance(stored.get(provider), str) and stored[provider]:
        key = stored[provider]
    elif provider == "jucode" and isinstance(auth.get("jucode"), dict) and auth["jucode"].get("access_token"):
        key = auth["jucode"]["access_token"]
    elif isinstance(cfg.get("api_key"), str) and cfg["api_key"]:
        key = cfg["api_key"]
    else:
        env_name = api_key_env_name(cfg)
        if env_name.startswith("sk-"):
            key = env_name
        else:
            key = os.environ.get(env_name) or (os.environ.get("OPENAI_API_KEY") if env_name != "OPENAI_API_KEY" else None)
    base = cfg.get("base_url") or cfg.get("jucode_base_url") or os.environ.get("OPENAI_BASE_URL") or ""
    if not base:
        base = PROVIDERS.get(provider, {}).get("base_url") or DEFAULT_BASE_URL
    return (key or None), normalize_base_url(base)


def extra_headers(config, model: str) -> dict:
    groups = _data(config).get("jucode_groups") or {}
    if isinstance(groups, dict) and groups.get(model):
        return {"X-JuCode-Group": str(groups[model])}
    return {}


def make_provider(config, model: str, api_key: Optional[str], base_url: str,
                  protocol: Optional[str] = None) -> Provider:
    """The wire API for ``model`` per §4.1 (``protocol`` overrides the resolution if given)."""
    proto = protocol or resolve_protocol(_data(config), model)
    headers = extra_headers(config, model)
    base = normalize_base_url(base_url) or DEFAULT_BASE_URL
    if proto == "anthropic":
        from jucode.llm.anthropic import AnthropicProvider

        return AnthropicProvider(api_key, base, extra_headers=headers)
    if proto == "chat":
        from jucode.llm.chat import ChatProvider

        return ChatProvider(api_key, base, extra_headers=headers)
    from jucode.llm.responses import ResponsesProvider

    return ResponsesProvider(api_key, base, protocol=proto if proto in ("codex", "azure") else "responses",
                             extra_headers=headers)
