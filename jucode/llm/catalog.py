"""Built-in model metadata, effort rules, protocol routing and cost (jucode-engine §4.1, §4.6–4.8).

Why built in: the engine must show a context window, a compaction limit and a cost for common
models without the user writing ``models[]`` entries; config entries always override. Unknown
models still work (window 0 = unknown, never auto-compacts; prices 0 = no cost shown).
Prices are USD per 1M tokens and only listed where they are well known; 0 means unknown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Optional

from jucode.llm.base import Usage

GPT_EFFORTS = ["none", "low", "medium", "high", "xhigh"]
DEFAULT_EFFORTS = list(GPT_EFFORTS)
CLAUDE_EFFORTS = ["none", "low", "medium", "high"]
CLAUDE_ADAPTIVE_EFFORTS = ["none", "low", "medium", "high", "xhigh", "max"]
O_SERIES_EFFORTS = ["low", "medium", "high"]
GPT5_EFFORTS = ["minimal", "low", "medium", "high"]
NO_EFFORTS = ["none"]
PROTOCOLS = ("responses", "codex", "azure", "anthropic", "chat")


@dataclass
class ModelInfo:
    name: str
    context_window: int = 0
    max_output_tokens: int = 0
    reasoning_efforts: list = field(default_factory=lambda: list(DEFAULT_EFFORTS))
    input_cost: float = 0.0
    cached_input_cost: float = 0.0
    output_cost: float = 0.0
    max_context_window: int = 0
    display_name: str = ""
    protocol: str = ""          # a catalog route ("" = none)
    known: bool = True          # False for names found nowhere

    @property
    def label(self) -> str:
        return self.display_name or self.name


def _m(name, window, max_out, efforts, cost=(0.0, 0.0, 0.0), protocol="", display=""):
    return ModelInfo(name=name, context_window=window, max_output_tokens=max_out,
                     reasoning_efforts=list(efforts), input_cost=cost[0], cached_input_cost=cost[1],
                     output_cost=cost[2], protocol=protocol, display_name=display)


_BUILTIN = [
    # Upstream templates (kit providers.rs).
    _m("gpt-5.5", 272_000, 128_000, GPT_EFFORTS),
    _m("gpt-5.4", 272_000, 128_000, GPT_EFFORTS),
    _m("gpt-5.4-mini", 400_000, 128_000, GPT_EFFORTS),
    _m("gpt-5.3-codex", 400_000, 128_000, ["low", "medium", "high", "xhigh"]),
    _m("gpt-5.2", 400_000, 128_000, GPT_EFFORTS),
    # OpenAI models with published limits and prices.
    _m("gpt-5.1", 400_000, 128_000, ["none", "low", "medium", "high"], (1.25, 0.125, 10.0)),
    _m("gpt-5", 400_000, 128_000, GPT5_EFFORTS, (1.25, 0.125, 10.0)),
    _m("gpt-5-mini", 400_000, 128_000, GPT5_EFFORTS, (0.25, 0.025, 2.0)),
    _m("gpt-5-nano", 400_000, 128_000, GPT5_EFFORTS, (0.05, 0.005, 0.40)),
    _m("gpt-5-codex", 400_000, 128_000, O_SERIES_EFFORTS, (1.25, 0.125, 10.0)),
    _m("gpt-4.1", 1_047_576, 32_768, NO_EFFORTS, (2.0, 0.50, 8.0)),
    _m("gpt-4.1-mini", 1_047_576, 32_768, NO_EFFORTS, (0.40, 0.10, 1.60)),
    _m("gpt-4.1-nano", 1_047_576, 32_768, NO_EFFORTS, (0.10, 0.025, 0.40)),
    _m("gpt-4o", 128_000, 16_384, NO_EFFORTS, (2.50, 1.25, 10.0)),
    _m("gpt-4o-mini", 128_000, 16_384, NO_EFFORTS, (0.15, 0.075, 0.60)),
    _m("o1", 200_000, 100_000, O_SERIES_EFFORTS, (15.0, 7.50, 60.0)),
    _m("o3", 200_000, 100_000, O_SERIES_EFFORTS, (2.0, 0.50, 8.0)),
    _m("o3-mini", 200_000, 100_000, O_SERIES_EFFORTS, (1.10, 0.55, 4.40)),
    _m("o4-mini", 200_000, 100_000, O_SERIES_EFFORTS, (1.10, 0.275, 4.40)),
    # Anthropic (Messages). Cached = cache-read price.
    _m("claude-opus-4-5", 200_000, 64_000, CLAUDE_EFFORTS, (5.0, 0.50, 25.0), "anthropic"),
    _m("claude-opus-4-1", 200_000, 32_000, CLAUDE_EFFORTS, (15.0, 1.50, 75.0), "anthropic"),
    _m("claude-opus-4", 200_000, 32_000, CLAUDE_EFFORTS, (15.0, 1.50, 75.0), "anthropic"),
    _m("claude-sonnet-4-5", 200_000, 64_000, CLAUDE_EFFORTS, (3.0, 0.30, 15.0), "anthropic"),
    _m("claude-sonnet-4", 200_000, 64_000, CLAUDE_EFFORTS, (3.0, 0.30, 15.0), "anthropic"),
    _m("claude-haiku-4-5", 200_000, 64_000, CLAUDE_EFFORTS, (1.0, 0.10, 5.0), "anthropic"),
    # DeepSeek (template routes over its Anthropic-compatible endpoint).
    _m("deepseek-v4-pro", 1_000_000, 384_000, ["high", "max"], protocol="anthropic"),
    _m("deepseek-v4-flash", 1_000_000, 384_000, ["high", "max"], protocol="anthropic"),
    _m("deepseek-chat", 128_000, 8_192, NO_EFFORTS),
    _m("deepseek-reasoner", 128_000, 64_000, NO_EFFORTS),
    # Local / OpenRouter templates.
    _m("qwen3-coder:30b", 128_000, 32_000, NO_EFFORTS, protocol="chat"),
    _m("gpt-oss:20b", 128_000, 32_000, NO_EFFORTS, protocol="chat"),
    _m("llama3.3:70b", 128_000, 32_000, NO_EFFORTS, protocol="chat"),
    _m("openai/gpt-5.5", 272_000, 128_000, GPT_EFFORTS, protocol="chat"),
    _m("anthropic/claude-sonnet-4.5", 200_000, 64_000, NO_EFFORTS, protocol="chat"),
    _m("qwen/qwen3-coder", 262_000, 32_000, NO_EFFORTS, protocol="chat"),
]
BUILTIN: dict = {m.name: m for m in _BUILTIN}

# Provider templates: display label, how it authenticates (``key``: an API key, ``none``: a local
# server, ``oauth``: the JuCode gateway's browser sign-in), default base URL, protocol, and the
# models[] a fresh config lists.
PROVIDERS: dict = {
    "jucode": {"label": "JuCode", "auth": "oauth", "base_url": "https://api.jucode.net/v1", "protocol": "responses",
               "models": ["gpt-5.5", "gpt-5.4", "gpt-5.4-mini", "gpt-5.3-codex", "gpt-5.2"]},
    "openai": {"label": "OpenAI", "auth": "key", "base_url": "https://api.openai.com/v1", "protocol": "responses",
               "models": ["gpt-5.5", "gpt-5.4", "gpt-5.4-mini", "gpt-5.3-codex", "gpt-5.2"]},
    "deepseek": {"label": "DeepSeek", "auth": "key", "base_url": "https://api.deepseek.com/anthropic",
                 "protocol": "anthropic",
                 "models": ["deepseek-v4-pro", "deepseek-v4-flash"]},
    "ollama": {"label": "Ollama", "auth": "none", "base_url": "http://127.0.0.1:11434/v1", "protocol": "chat",
               "models": ["qwen3-coder:30b", "gpt-oss:20b", "llama3.3:70b"]},
    "openrouter": {"label": "OpenRouter", "auth": "key", "base_url": "https://openrouter.ai/api/v1", "protocol": "chat",
                   "models": ["openai/gpt-5.5", "anthropic/claude-sonnet-4.5", "qwen/qwen3-coder"]},
    "anthropic": {"label": "Anthropic", "auth": "key", "base_url": "https://api.anthropic.com", "protocol": "anthropic",
                  "models": ["claude-sonnet-4-5", "claude-opus-4-5", "claude-haiku-4-5"]},
}

_DATED = re.compile(r"^(?:\d{8}|\d{4}-\d{2}-\d{2}|latest)$")


def builtin(name: str) -> Optional[ModelInfo]:
    """Exact name, a dated/``-latest`` variant (``claude-sonnet-4-5-20250929``), or dotted Claude alias."""
    if not name:
        return None
    if name in BUILTIN:
        return BUILTIN[name]
    if name.startswith("claude-") and "." in name:
        alt = name.replace(".", "-")
        if alt in BUILTIN:
            return BUILTIN[alt]
        name = alt
    best = None
    for key in BUILTIN:
        if name.startswith(key + "-") and _DATED.match(name[len(key) + 1:]):
            if best is None or len(key) > len(best):
                best = key
    return BUILTIN[best] if best else None


def is_claude(name: str) -> bool:
    n = (name or "").lower()
    return n.startswith("claude-") or n.startswith("anthropic/claude")


def _entry_info(entry: dict, base: Optional[ModelInfo]) -> ModelInfo:
    info = replace(base) if base else ModelInfo(name=entry.get("name", ""))
    info.reasoning_efforts = list(info.reasoning_efforts)
    info.name = entry.get("name") or info.name
    for key in ("context_window", "max_context_window", "max_output_tokens"):
        if entry.get(key) is not None:
            try:
                setattr(info, key, max(0, int(entry[key])))
            except (TypeError, ValueError):
                pass
    for key in ("input_cost", "cached_input_cost", "output_cost"):
        if entry.get(key) is not None:
            try:
                setattr(info, key, float(entry[key]))
            except (TypeError, ValueError):
                pass
    if isinstance(entry.get("reasoning_efforts"), list):
        info.reasoning_efforts = [str(e) for e in entry["reasoning_efforts"] if str(e)]
    if entry.get("display_name"):
        info.display_name = str(entry["display_name"])
    info.known = True
    return info


def resolve_model(config: Optional[dict], name: str) -> ModelInfo:
    """Metadata for ``name``: config ``models[]`` entry over the built-in entry over defaults.

    Claude entries with no efforts (or only ``none``) are upgraded and get max output ≥ 32 000;
    ``context_window_overrides[name]`` raises/fills the window (capped at ``max_context_window``).
    """
    config = config or {}
    base = builtin(name)
    entry = None
    for e in config.get("models") or []:
        if isinstance(e, dict) and e.get("name") == name:
            entry = e
            break
    if entry is not None:
        info = _entry_info(entry, base)
    elif base is not None:
        info = replace(base, reasoning_efforts=list(base.reasoning_efforts), name=name)
    else:
        info = ModelInfo(name=name, known=False)
    if is_claude(name) and (not info.reasoning_efforts or info.reasoning_efforts == ["none"]):
        info.reasoning_efforts = list(CLAUDE_EFFORTS)
        info.max_output_tokens = max(info.max_output_tokens, 32_000)
    overrides = config.get("context_window_overrides") or {}
    if isinstance(overrides, dict) and name in overrides:
        try:
            window = int(overrides[name])
            if info.max_context_window:
                window = min(window, info.max_context_window)
            info.context_window = max(info.context_window, window)
        except (TypeError, ValueError):
            pass
    return info


def list_models(config: Optional[dict]) -> list:
    """The models a picker shows: config ``models[]`` if present, else the provider template."""
    config = config or {}
    entries = config.get("models")
    if isinstance(entries, list) and entries:
        names = [e.get("name") for e in entries if isinstance(e, dict) and e.get("name")]
    else:
        names = list(PROVIDERS.get(config.get("provider") or "openai", PROVIDERS["openai"])["models"])
    return [resolve_model(config, n) for n in dict.fromkeys(names)]


# -- effort rules (§4.6) --------------------------------------------------------------------------

def effective_effort(info: ModelInfo, configured: str) -> str:
    """What is sent: the configured effort if listed (or nothing is listed), else high, else middle."""
    efforts = info.reasoning_efforts or []
    if not efforts or configured in efforts:
        return configured
    if "high" in efforts:
        return "high"
    return efforts[len(efforts) // 2]


def normalize_effort(info: ModelInfo, stored: str) -> str:
    """Config load: an invalid stored effort becomes medium if supported, else the first, else medium."""
    efforts = info.reasoning_efforts or []
    if stored in efforts or (not efforts and stored):
        return stored
    if "medium" in efforts:
        return "medium"
    return efforts[0] if efforts else "medium"


def effort_after_switch(info: ModelInfo, current: str) -> str:
    """``/model``: keep the effort if the new model supports it, else medium, else its first."""
    return normalize_effort(info, current)


def next_effort(info: ModelInfo, current: str) -> str:
    """``/effort`` with no argument cycles through the model's list."""
    efforts = info.reasoning_efforts or []
    if not efforts:
        return current
    if current not in efforts:
        return efforts[0]
    return efforts[(efforts.index(current) + 1) % len(efforts)]


def lightest_effort(info: ModelInfo) -> str:
    """Subagents and the title model use the first (cheapest) tier."""
    return info.reasoning_efforts[0] if info.reasoning_efforts else ""


# -- limits and cost -------------------------------------------------------------------------------

def context_limit(context_window: int, threshold_percent=75) -> int:
    """Auto-compaction threshold; 0 when the window is unknown."""
    try:
        pct = int(threshold_percent)
    except (TypeError, ValueError):
        pct = 75
    pct = min(95, max(10, pct))
    return int(context_window or 0) * pct // 100


def cost(usage: Usage, info: ModelInfo) -> float:
    """USD for one usage record at ``info``'s prices (cached tokens ⊆ input tokens)."""
    cached = min(usage.cached_input_tokens, usage.input_tokens)
    return ((usage.input_tokens - cached) * info.input_cost + cached * info.cached_input_cost
            + usage.output_tokens * info.output_cost) / 1e6


# -- protocol routing (§4.1) ----------------------------------------------------------------------

def heuristic_protocol(model: str) -> str:
    return "anthropic" if is_claude(model) and not model.startswith("anthropic/") else "responses"


def resolve_protocol(config: Optional[dict], model: str) -> str:
    """Provider ``jucode`` routes per model (Claude → anthropic, else responses) ignoring config;
    other providers: template route for (provider, model), else config ``protocol``, else heuristic."""
    config = config or {}
    provider = (config.get("provider") or "openai").strip()
    if provider == "jucode":
        return heuristic_protocol(model)
    tmpl = PROVIDERS.get(provider)
    if tmpl and model in tmpl["models"]:
        return tmpl["protocol"]
    proto = (config.get("protocol") or "").strip().lower()
    if proto in PROTOCOLS:
        return proto
    return heuristic_protocol(model)


# -- `jucode providers` (§1) -----------------------------------------------------------------------

def providers_json() -> str:
    """One JSON array line describing the built-in provider templates, ``jucode`` first.

    Why here: the CLI must print it without starting an engine, and the data is the catalog's.
    """
    import json

    order = ["jucode"] + [p for p in PROVIDERS if p != "jucode"]
    out = []
    for pid in order:
        tmpl = PROVIDERS[pid]
        models = []
        for name in tmpl["models"]:
            info = resolve_model({"provider": pid}, name)
            models.append({"name": name, "context_window": int(info.context_window),
                           "max_output_tokens": int(info.max_output_tokens),
                           "reasoning_efforts": list(info.reasoning_efforts)})
        out.append({"id": pid, "base_url": tmpl["base_url"], "protocol": tmpl["protocol"], "models": models})
    return json.dumps(out, separators=(",", ":"))
