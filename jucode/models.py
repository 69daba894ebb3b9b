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


def wire_effort(info, effort: str) -> str:
    """The effort a request carries: "none" is sent to models that offer other efforts too
    (it is a real setting there), but dropped for models with no reasoning at all (gpt-4o,
    unknown models), which would reject a reasoning parameter."""
    if effort == "none" and set(getattr(info, "reasoning_efforts", None) or []) <= {"none"}:
        return ""
    return effort


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


# -- background warm-up ----------------------------------------------------------------------------

_PREWARM_MODULES = ("openai", "jucode.llm.openai_common", "jucode.llm.responses", "jucode.llm.chat",
                    "jucode.llm.anthropic", "jucode.tools.registry", "jucode.tools.projection")


def prewarm(engine, modules=_PREWARM_MODULES) -> None:
    """Load the tokenizer, then the model SDK, on a daemon thread once startup is written.

    Why: the first turn otherwise pays ~0.3 s for o200k plus ~0.5 s for ``import openai`` (much
    more on a loaded machine, where both fight for the GIL). Why this order: building o200k
    briefly needs ~80 MB; doing it *before* the SDK is resident and trimming the heap right after
    keeps the process peak ~30 MB lower than the reverse order. Call it on the main thread right
    after ``ext.after_startup()``; it never raises and never blocks.
    """
    try:
        counter = engine.sessions.counter()     # main thread: creates it and starts its load
    except Exception:
        counter = None

    def run() -> None:
        import importlib
        import logging

        try:
            if counter is not None:
                counter._loaded.wait(60)
            from .heap import trim_heap
            trim_heap()
            for name in modules:
                importlib.import_module(name)
            trim_heap()
        except Exception as exc:   # warm-up is an optimisation only
            logging.getLogger(__name__).debug("prewarm failed: %s", exc)

    import threading

    threading.Thread(target=run, name="jucode-prewarm", daemon=True).start()
