"""Per-call gating on the worker: unknown tool, plan mode, pre_tool_use hooks, approval.

Runs before any call of a batch executes, one call at a time, so approval requests reach the
front-end one by one. The outcome is either a ready result (refused, blocked, denied,
deferred) or the arguments to run with (possibly narrowed to the approved hunks).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Optional

import orjson

from .approvals import DENIED_RESULT, Approval, needs_approval
from .tools.base import GATE_SHELL, ToolSpec

log = logging.getLogger("jucode.gate")


@dataclass
class GateDecision:
    spec: Optional[ToolSpec]
    arguments: str
    result: Optional[dict] = None                # set when the call must not run
    post_process: Optional[Callable] = None      # adds applied/rejected hunks to the result


def _parse_args(raw: str):
    try:
        val = orjson.loads(raw or "{}")
    except orjson.JSONDecodeError:
        return None
    return val if isinstance(val, dict) else None


def gate_call(ctx, call: dict, specs: dict) -> GateDecision:
    name = call.get("name") or "unknown"
    raw_args = call.get("arguments") or "{}"
    spec = specs.get(name)
    if spec is None:
        disabled = _disabled_edit_tool(name, ctx.config)
        if disabled:
            return GateDecision(None, raw_args, result={"error": disabled})
        for explain in ctx.settings.extra.get("missing_tool_errors", ()):
            result = explain(name)        # a subsystem's own text for a tool it owns (hosts' turn_extra)
            if result is not None:
                return GateDecision(None, raw_args, result=result)
        alias = _resolve_alias(name)
        spec = specs.get(alias) if alias else None
    if spec is None:
        return GateDecision(None, raw_args, result={"error": f"unknown tool: {name}"})
    args = _parse_args(raw_args)
    live = ctx.live

    # A mode change reaches a running turn only where it loosens gating (seed: "an in-flight
    # turn's gating can only loosen"): a call is refused or asked about only when both the mode
    # the turn started in and the live mode would do so.
    modes = (ctx.start_mode or live.mode, live.mode)

    if all(m == "plan" for m in modes):
        refusal = _plan_refusal(spec, args or {})
        if refusal is not None:
            return GateDecision(spec, raw_args, result=refusal)

    if ctx.hooks is not None and args is not None:
        try:
            reason = ctx.hooks.pre_tool_use(spec.name, args)
        except Exception:  # a broken hook never blocks by accident
            log.exception("pre_tool_use hook failed")
            reason = None
        if reason:
            return GateDecision(spec, raw_args, result={"error": f"blocked by pre_tool_use hook: {reason}"})

    read_only_hint = bool(getattr(spec, "read_only_hint", False))
    if spec.name in live.allowlist or not all(needs_approval(spec.gate, m, read_only_hint) for m in modes):
        return GateDecision(spec, raw_args)
    if spec.gate == GATE_SHELL and spec.name == "write_stdin" and args is not None \
            and not args.get("text") and not args.get("chars"):
        return GateDecision(spec, raw_args)   # polling a running session changes nothing
    if spec.gate == GATE_SHELL and "auto" in modes and args is not None and _safety_allows(ctx, spec.name, args):
        return GateDecision(spec, raw_args)   # auto mode: the safety model found it routine

    hunks = _plan_hunks(spec.name, args, ctx.settings.cwd) if args is not None else None
    approval = Approval(call_id=call["call_id"], name=spec.name, summary=_summary(spec.name, args or {}),
                        arguments=raw_args, gate=spec.gate, subagent_id=ctx.settings.subagent_id,
                        hunks=hunks, read_only_hint=read_only_hint, turn_id=ctx.turn_id)
    ctx.emit({"type": "_approval", "approval": approval})
    answer = approval.wait(ctx.interrupt)
    ctx.check()
    if answer.decision == "deferred":
        return GateDecision(spec, raw_args, result=answer.deferred_result or {"status": "submitted for confirmation"})
    if answer.decision != "allow":
        return GateDecision(spec, raw_args, result=dict(DENIED_RESULT))
    if answer.hunks is None or args is None:
        return GateDecision(spec, raw_args)
    from .tools.hunks import annotate_result, filter_arguments, filter_error_result
    try:
        new_args, applied, rejected = filter_arguments(spec.name, args, answer.hunks)
    except ValueError as e:
        return GateDecision(spec, raw_args, result=filter_error_result(e))
    return GateDecision(spec, orjson.dumps(new_args).decode(),
                        post_process=lambda r: annotate_result(r, applied, rejected))


def _safety_allows(ctx, name: str, args: dict) -> bool:
    """Only an explicit ``allow`` from the classifier skips the question (jucode/safety.py)."""
    check = ctx.settings.extra.get("safety")
    if check is None:
        return False
    outcome, rationale = check(ctx, name, args)
    log.info("safety classifier: %s for %s (%s)", outcome, name, rationale)
    ctx.check()
    return outcome == "allow"


def _disabled_edit_tool(name: str, config: dict) -> Optional[str]:
    try:
        from .tools.registry import disabled_edit_tool_error
    except ImportError:
        return None
    return disabled_edit_tool_error(name, config)


def _resolve_alias(name: str) -> Optional[str]:
    try:
        from .tools.registry import ALIASES
    except ImportError:
        return None
    return ALIASES.get(name)


def _plan_refusal(spec: ToolSpec, args: dict) -> Optional[dict]:
    try:
        from .planmode import plan_mode_refusal
    except ImportError:
        return {"error": f"plan mode: {spec.name} was not run."}
    return plan_mode_refusal(spec.name, args, read_only_hint=bool(getattr(spec, "read_only_hint", False)))


def _plan_hunks(name: str, args: dict, cwd: str):
    try:
        from .tools.hunks import plan_hunks
        return plan_hunks(name, args, cwd)
    except Exception:  # hunk planning failure means whole-call approval only
        return None


def _summary(name: str, args: dict) -> str:
    try:
        from .tools.registry import summary_for
        return summary_for(name, args)
    except Exception:
        for key in ("command", "cmd", "path"):
            if isinstance(args.get(key), str):
                return args[key]
        return ""
