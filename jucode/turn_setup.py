"""Everything a turn needs, gathered on the main thread before the worker starts.

Heavy modules (the openai SDK, the tool implementations) are imported here, on the first turn,
never at startup.
"""

from __future__ import annotations

from typing import Optional

from .messages import QueuedMessage
from .turn import TurnContext, TurnSettings


def credentials(engine):
    from .llm.factory import resolve_credentials
    return resolve_credentials(engine.config.data, engine.profile)


def provider_factory(engine, model: str):
    """A zero-argument builder for the turn's provider. Providers are cheap to construct (the
    SDK client inside is made lazily, on the worker, at the first request) and are cached per
    model and endpoint, so every turn and subagent shares one connection pool."""
    cfg = dict(engine.config.data)
    replay = engine.replay_script()
    if replay is not None:
        from .engine import TurnSetupError
        from .llm.replay import ReplayProvider
        try:
            provider = ReplayProvider.shared(replay)   # the script's progress spans turns
        except Exception as e:
            raise TurnSetupError(f"failed to load replay script {replay}: {e}") from e
        return lambda: provider
    from .engine import TurnSetupError
    api_key, base_url = credentials(engine)
    if not api_key:
        env = engine.config.get("api_key_env") or "OPENAI_API_KEY"
        raise TurnSetupError(f"api_key is not set and {env} is not set. Configure one before sending prompts.")
    from .llm.factory import make_provider
    # One provider (and so one HTTP client and connection pool) per model and endpoint, reused
    # across turns and subagents; providers are thread-safe.
    key = (model, api_key, base_url, cfg.get("protocol"), cfg.get("provider"),
           str((cfg.get("jucode_groups") or {}).get(model) if isinstance(cfg.get("jucode_groups"), dict) else ""))
    cache = engine.providers
    provider = cache.get(key)
    if provider is None:
        provider = cache[key] = make_provider(cfg, model, api_key, base_url)
    return lambda: provider


def tool_specs(engine) -> list:
    from .tools.registry import builtin_specs
    specs = list(builtin_specs(engine.config.data))
    specs.extend(engine.ext.extra_tool_specs())
    return specs


def system_prompt(engine, specs: list) -> str:
    return engine.ext.system_prompt(prompt_tool_names(engine, specs))


def prompt_tool_names(engine, specs: list) -> list:
    """The "Available tools:" line, as upstream writes it: the builtins, web_search and
    generate_image when offered, and the agent tools; goal, plan and MCP tools are left to
    their own specs."""
    from .subagents.tools import SUBAGENT_TOOL_NAMES
    from .tools.registry import builtin_specs
    listed = {s.name for s in builtin_specs(engine.config.data)} | {"web_search", "generate_image"}
    listed.update(SUBAGENT_TOOL_NAMES)
    return [s.name for s in specs if s.name in listed]


def build_turn(engine, msg: Optional[QueuedMessage], input_items: Optional[list] = None):
    from .engine import Turn
    from .tools.projection import project_model_output
    from .models import wire_effort
    from .tools.registry import run_tool
    info = engine.model_info()
    specs = tool_specs(engine)
    make_provider = provider_factory(engine, engine.model)
    engine._turn_seq += 1
    settings = TurnSettings(
        model=engine.model,
        instructions=system_prompt(engine, specs),
        tools=specs,
        make_provider=make_provider,
        reasoning_effort=wire_effort(info, engine.effective_effort()),
        max_output_tokens=int(info.max_output_tokens or 0),
        session_id=engine.session_id,
        cwd=engine.cwd,
        retry_attempts=_retry_attempts(engine),
        read_timeout=float(engine.config.get("read_timeout_seconds") or 300),
        connect_timeout=float(engine.config.get("connect_timeout_seconds") or 30),
        tool_runner=run_tool,
        project_output=project_model_output,
        extra=engine.ext.turn_extra(),
    )
    ctx = TurnContext(turn_id=engine._turn_seq, settings=settings, live=engine.live,
                      post=engine.post, pool=engine.pool, read_state=engine.read_state,
                      shell_sessions=engine.shell(), profile_dir=str(engine.profile),
                      config=engine.config.data, hooks=engine.ext.hooks_runner())
    settings.extra["_input"] = input_items if input_items is not None else engine.sessions.request_items()
    from .safety import safety_check
    settings.extra["safety"] = safety_check(engine)
    return Turn(ctx.turn_id, ctx, msg)


def _retry_attempts(engine) -> int:
    """Retries after the first attempt (env JUCODE_RETRY_ATTEMPTS, then config, then 5)."""
    from .llm.retry import retry_attempts
    return retry_attempts(engine.config.get("retry_attempts", 5))
