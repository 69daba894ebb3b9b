"""The five subagent tools the model calls: spawn_agent, wait_agent, list_agents, send_message,
close_agent.

They run on the calling agent's worker. Agent state lives on the main thread, so every read or
change goes through ``ctx.extra["call_main"]`` to a :class:`~jucode.subagents.host.SubagentsHost`
method; only ``wait_agent`` blocks here, on the host's change signal, so an interrupt ends the
wait at once. Validation errors use upstream's texts.
"""

from __future__ import annotations

import time

from ..tools.base import GATE_READ, ToolContext, ToolError, ToolSpec
from .records import MAX_DEPTH, depth_of

# The five agent tools, in the order the system prompt lists them.
SUBAGENT_TOOL_NAMES = ("spawn_agent", "wait_agent", "list_agents", "send_message", "close_agent")

WAIT_DEFAULT_MS = 30_000
WAIT_MIN_MS = 100
WAIT_MAX_MS = 30_000

S = {"type": "string"}


def _obj(props: dict, required: list) -> dict:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def _host_and_main(ctx: ToolContext):
    host = ctx.extra.get("subagents")
    call_main = ctx.extra.get("call_main")
    if host is None or call_main is None:
        raise ToolError("subagents are not available here")

    def on_main(fn):
        value = call_main(fn, ctx.interrupt)
        if value is None and ctx.interrupt.is_set():
            raise ToolError("interrupted")
        return value
    return host, on_main


def _main(on_main, fn):
    """Run fn on the main thread; a ValueError there becomes this tool's error result."""
    try:
        return on_main(fn)
    except ValueError as e:
        raise ToolError(str(e)) from None


# -- spawn_agent ---------------------------------------------------------------------------------

def run_spawn_agent(args: dict, ctx: ToolContext) -> dict:
    host, on_main = _host_and_main(ctx)
    if depth_of(ctx.agent_path) + 1 > MAX_DEPTH:
        raise ToolError("agent depth limit reached. Solve the task yourself.")
    rec, opts = _main(on_main, lambda: host.reserve(ctx.agent_path, args, ctx.call_id))
    if opts["isolation"] == "worktree":
        from .child import prepare_worktree
        try:
            rec.workdir = prepare_worktree(ctx.cwd, rec.task_name)
        except Exception as e:
            msg = f"failed to prepare isolated workspace: {e}"
            on_main(lambda: host.abandon(rec, msg))
            raise ToolError(msg) from None
    return _main(on_main, lambda: host.start(rec, opts))


# -- wait_agent ----------------------------------------------------------------------------------

def run_wait_agent(args: dict, ctx: ToolContext) -> dict:
    host, on_main = _host_and_main(ctx)
    targets = args.get("targets")
    if targets is not None:
        if isinstance(targets, str):
            targets = [targets]
        if not isinstance(targets, list) or any(not isinstance(t, str) or not t.strip() for t in targets):
            raise ToolError("target is required")
    timeout_ms = args.get("timeout_ms", WAIT_DEFAULT_MS)
    if not isinstance(timeout_ms, (int, float)) or isinstance(timeout_ms, bool):
        timeout_ms = WAIT_DEFAULT_MS
    timeout_ms = min(WAIT_MAX_MS, max(WAIT_MIN_MS, int(timeout_ms)))
    deadline = time.monotonic() + timeout_ms / 1000.0
    while True:
        version = host.version
        ready, status = _main(on_main, lambda: host.wait_check(ctx.agent_path, targets))
        if ready:
            return {"status": status, "timed_out": False}
        if not host.wait_change(version, deadline, ctx.interrupt):
            if ctx.interrupt.is_set():
                raise ToolError("interrupted")
            if time.monotonic() >= deadline:
                _, status = _main(on_main, lambda: host.wait_check(ctx.agent_path, targets))
                return {"status": status, "timed_out": True}


# -- list / send / close -----------------------------------------------------------------------

def run_list_agents(args: dict, ctx: ToolContext) -> dict:
    host, on_main = _host_and_main(ctx)
    prefix = args.get("path_prefix")
    prefix = prefix if isinstance(prefix, str) and prefix else None
    return {"agents": _main(on_main, lambda: host.list_rows(prefix))}


def _target(args: dict) -> str:
    t = args.get("target")
    if not isinstance(t, str) or not t.strip():
        raise ToolError("target is required")
    return t


def run_send_message(args: dict, ctx: ToolContext) -> dict:
    host, on_main = _host_and_main(ctx)
    target = _target(args)
    message = args.get("message")
    if not isinstance(message, str) or not message.strip():
        raise ToolError("message is required")
    return _main(on_main, lambda: host.send(ctx.agent_path, target, message))


def run_close_agent(args: dict, ctx: ToolContext) -> dict:
    host, on_main = _host_and_main(ctx)
    target = _target(args)
    return _main(on_main, lambda: host.close_target(ctx.agent_path, target))


# -- specs ---------------------------------------------------------------------------------------

def _models_text(engine) -> str:
    from ..models import resolve_model_info
    info = resolve_model_info(engine.config.data, engine.model)
    lines = [f"- {engine.model} (your own model; reasoning effort: {', '.join(info.reasoning_efforts or []) or 'default'})"]
    for entry in engine.config.get("subagent_models") or []:
        if not isinstance(entry, dict) or not entry.get("name"):
            continue
        mi = resolve_model_info(engine.config.data, entry["name"])
        lines.append(f"- {entry['name']} (reasoning effort: {', '.join(mi.reasoning_efforts or []) or 'default'}): "
                     f"{entry.get('description') or ''}".rstrip(": "))
    return "\n".join(lines)


def subagent_tool_specs(engine) -> list:
    spawn_desc = ("Start a subagent for a bounded, independent piece of work; it runs concurrently and "
                  "returns its final report. At most 4 live agents, nesting depth 2. Models:\n"
                  + _models_text(engine))
    return [
        ToolSpec("spawn_agent", spawn_desc, _obj({
            "task_name": {**S, "description": "lowercase letters, digits, underscores; at most 64 chars"},
            "message": {**S, "description": "the complete task for the subagent"},
            "model": S, "reasoning_effort": S,
            "max_tool_calls": {"type": "integer", "minimum": 1},
            "timeout_secs": {"type": "integer", "minimum": 10},
            "max_output_tokens": {"type": "integer", "minimum": 512},
            "fork_turns": {**S, "description": '"none" (default), "all", or N: pass the last N user turns'},
            "isolation": {"type": "string", "enum": ["none", "worktree"],
                          "description": "worktree gives the agent its own git worktree"},
        }, ["task_name", "message"]), run_spawn_agent, gate=GATE_READ),
        ToolSpec("wait_agent", "Wait until one of the target agents (default: any of yours) finishes; returns "
                               "each target's status.",
                 _obj({"targets": {"type": "array", "items": S},
                       "timeout_ms": {"type": "integer", "minimum": 100, "maximum": 30000}}, []),
                 run_wait_agent, gate=GATE_READ),
        ToolSpec("list_agents", "List agents with their status and results.",
                 _obj({"path_prefix": S}, []), run_list_agents, gate=GATE_READ),
        ToolSpec("send_message", "Queue a message for a running agent; it is delivered before its next "
                                 "model request.",
                 _obj({"target": S, "message": S}, ["target", "message"]), run_send_message, gate=GATE_READ),
        ToolSpec("close_agent", "Stop an agent and discard its remaining work.",
                 _obj({"target": S}, ["target"]), run_close_agent, gate=GATE_READ),
    ]
