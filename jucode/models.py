"""The engine's view of the selected model: metadata, effective effort, status fields, cost.

A thin layer over ``jucode.llm.catalog`` so the engine never deals with catalog details and
``model_status`` is built in one place.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field


@dataclass
class _FallbackInfo:
    name: str
    context_window: int = 0
    max_output_tokens: int = 0
    reasoning_efforts: list = field(default_factory=lambda: ["none", "low", "medium", "high", "xhigh"])
    input_cost: float = 0.0
    cached_input_cost: float = 0.0
    output_cost: float = 0.0
    display_name: str | None = None


def resolve_model_info(config: dict, model: str):
    try:
        from .llm.catalog import resolve_model
    except ImportError:
        return _FallbackInfo(model)
    return resolve_model(config, model)


def effective_effort(info, effort: str) -> str:
    try:
        from .llm.catalog import effective_effort as eff
    except ImportError:
        return effort
    return eff(info, effort)


def context_limit(info, config: dict) -> int:
    try:
        pct = int(config.get("compaction_threshold_percent", 75))
    except (TypeError, ValueError):
        pct = 75
    pct = min(95, max(10, pct))
    return int(info.context_window or 0) * pct // 100


def cost_of(info, usage: dict) -> float:
    inp = int(usage.get("input_tokens") or 0)
    cached = int(usage.get("cached_input_tokens") or 0)
    out = int(usage.get("output_tokens") or 0)
    return (max(0, inp - cached) * float(info.input_cost or 0) + cached * float(info.cached_input_cost or 0)
            + out * float(info.output_cost or 0)) / 1e6


def api_key_status(engine) -> str:
    """"set", "missing" — never the key itself."""
    try:
        from .llm.factory import resolve_credentials
        key, _ = resolve_credentials(engine.config.data, engine.profile)
    except Exception:
        key = os.environ.get(engine.config.get("api_key_env") or "OPENAI_API_KEY")
    return "set" if key else "missing"


def model_label(info) -> str | None:
    """The catalog/config display name, or None (the protocol's null) when there is none."""
    return (getattr(info, "display_name", None) or "").strip() or None


def model_status_fields(engine, state: str) -> dict:
    info = engine.model_info()
    cfg = engine.config.data
    fields = {
        "provider": engine.config.get("provider") or "openai",
        "model": engine.model,
        "model_label": model_label(info),
        "reasoning_effort": effective_effort(info, engine.effort),
        "context_window": int(info.context_window or 0),
        "context_limit": context_limit(info, cfg),
        "max_output_tokens": int(info.max_output_tokens or 0),
        "reasoning_efforts": list(info.reasoning_efforts or []),
        "state": state,
    }
    if engine.key_missing():
        fields["api_key"] = "missing"
    return fields
