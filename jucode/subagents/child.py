"""Building and running one child turn.

A child reuses the ordinary agent loop (``jucode.turn.run_turn``) with a TurnContext of its
own. The only trick is its ``post``: every message the child's worker would send the engine is
wrapped as ``{"type": "_subagent", "key": ..., "event": ...}`` so the main loop hands it to the
subagents host instead of treating it as the parent's (which would end the parent's turn or
record the child's items into the session).
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
from typing import Optional

from .records import AgentRecord

log = logging.getLogger("jucode.subagents")

FILES_CHANGED_CAP = 200


def context_block(path: str, workdir: str, isolated: bool, plan_mode: bool) -> str:
    """The ``<subagent_context>`` appended to the parent's system prompt (our own words)."""
    where = (f"You work in your own isolated copy of the repository at {workdir}; your file edits stay "
             f"there and must not target paths outside it." if isolated
             else f"You share the parent's workspace at {workdir}; other agents may edit files there too, "
                  f"so re-read a file before changing it.")
    lines = [
        "<subagent_context>",
        f"You are JuCode subagent {path}, a helper started by another agent for one bounded task.",
        "Do exactly that task, then stop; do not widen its scope.",
        where,
        "Your final message is handed back to the agent that started you. Structure it as: Summary, "
        "Evidence, Files/commands checked, Risks or unknowns.",
        "Nobody will answer follow-up questions: decide for yourself and state your assumptions.",
    ]
    if plan_mode:
        lines.append("The session is in plan mode: only read and investigate; do not change files.")
    lines.append("</subagent_context>")
    return "\n".join(lines)


def task_item(path: str, message: str) -> dict:
    text = f'<subagent_task path="{path}">\n{message}\n</subagent_task>'
    return {"role": "user", "content": [{"type": "input_text", "text": text}]}


def mail_item(message: str) -> dict:
    text = f"<subagent_message>\n{message}\n</subagent_message>"
    return {"role": "user", "content": [{"type": "input_text", "text": text}]}


def fork_items(items: list, fork: str) -> list:
    """The parent's context to hand down: none, all, or from the Nth-last user item. Calls
    without an output (the batch that is spawning right now) are dropped: an unanswered call
    is invalid input for every wire API."""
    if fork == "none":
        return []
    answered = {i.get("call_id") for i in items if i.get("type") == "function_call_output"}
    kept = [i for i in items if i.get("type") != "function_call" or i.get("call_id") in answered]
    if fork == "all":
        return kept
    n = int(fork)
    users = [idx for idx, i in enumerate(kept) if i.get("role") == "user"]
    if not users:
        return kept
    start = users[-n] if n <= len(users) else users[0]
    return kept[start:]


def validate_fork(value) -> Optional[str]:
    """Normalized fork_turns, or raise ValueError with upstream's text."""
    if value is None:
        return "none"
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return str(value)
    if isinstance(value, str):
        v = value.strip().lower()
        if v in ("none", "all"):
            return v
        if v.isdigit() and int(v) > 0:
            return str(int(v))
    raise ValueError('fork_turns must be "all", "none", or a positive integer string')


# -- isolation --------------------------------------------------------------------------------

def prepare_worktree(cwd: str, task_name: str) -> str:
    """``<cwd>/.jucode/agents/<task>-<ms>``: a detached git worktree inside a repository, an
    empty directory otherwise. Raises RuntimeError with the reason."""
    base = os.path.join(cwd, ".jucode", "agents")
    os.makedirs(base, exist_ok=True)
    target = os.path.join(base, f"{task_name}-{int(time.time() * 1000)}")
    inside = subprocess.run(["git", "-C", cwd, "rev-parse", "--is-inside-work-tree"],
                            capture_output=True, text=True)
    if inside.returncode == 0 and inside.stdout.strip() == "true":
        r = subprocess.run(["git", "-C", cwd, "worktree", "add", "--detach", target],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError((r.stderr or r.stdout).strip() or f"git worktree add exited {r.returncode}")
    else:
        os.makedirs(target, exist_ok=False)
    return os.path.realpath(target)


def files_changed(workdir: str) -> list:
    """Paths the child changed in its isolated tree (git status, or every file when not a repo)."""
    r = subprocess.run(["git", "-C", workdir, "status", "--porcelain", "--no-renames"],
                       capture_output=True, text=True)
    if r.returncode == 0:
        out = [line[3:] for line in r.stdout.splitlines() if len(line) > 3]
        return out[:FILES_CHANGED_CAP]
    found = []
    for root, _dirs, files in os.walk(workdir):
        for f in files:
            found.append(os.path.relpath(os.path.join(root, f), workdir))
            if len(found) >= FILES_CHANGED_CAP:
                return found
    return found


def isolated_runner(root: str):
    """The tool runner of a worktree child: refusals of edits outside its tree say why, in
    upstream's "write isolation" words (the shared path check only knows "outside the workspace")."""
    import re
    from ..tools.base import GATE_EDIT
    from ..tools.registry import run_tool
    pattern = re.compile(r"^path escapes the workspace: (.*) resolves outside ", re.S)

    def runner(spec, raw_args, tctx):
        result, is_err = run_tool(spec, raw_args, tctx)
        err = result.get("error") if isinstance(result, dict) else None
        if spec.gate == GATE_EDIT and isinstance(err, str):
            m = pattern.match(err)
            if m:
                what = (f"apply_patch touches {m.group(1)} outside the workspace" if spec.name == "apply_patch"
                        else f"{spec.name} targets {m.group(1)} outside the workspace")
                result = {"error": f"write isolation: {what}. This agent's file writes are confined to its "
                                   f"workspace {root}. Make the change inside that workspace instead."}
        return result, is_err
    return runner


# -- the turn ---------------------------------------------------------------------------------

def build_child_context(engine, host, rec: AgentRecord, instructions: str, input_items: list, *,
                        max_tool_calls: int, timeout_secs: Optional[int], max_output_tokens: Optional[int]):
    """The child's TurnContext; called on the main thread (reads engine state)."""
    from ..models import resolve_model_info, wire_effort
    from ..tools.projection import project_model_output
    from ..tools.registry import builtin_specs, run_tool
    from ..turn import TurnContext, TurnSettings
    from ..turn_setup import _retry_attempts, provider_factory
    from .tools import subagent_tool_specs

    info = resolve_model_info(engine.config.data, rec.model)
    # Upstream's children get the builtin tools plus MCP tools; goal, plan and other host
    # tools stay with the root agent.
    specs = list(builtin_specs(engine.config.data)) + subagent_tool_specs(engine)
    mcp = engine.ext.host("McpHost")
    if mcp is not None:
        taken = {s.name for s in specs}
        specs += [s for s in mcp.tool_specs() if s.name not in taken]
    cap = int(info.max_output_tokens or 0)
    out_tokens = cap
    if max_output_tokens:
        out_tokens = max(512, int(max_output_tokens))
        if cap:
            out_tokens = min(out_tokens, cap)
    read_timeout = float(engine.config.get("read_timeout_seconds") or 300)
    if timeout_secs:
        read_timeout = min(read_timeout, float(timeout_secs))
    isolated = rec.isolation == "worktree"
    block = context_block(rec.path, rec.workdir, isolated, engine.live.mode == "plan")
    from ..safety import safety_check
    extra = {"call_main": engine.run_on_main, "subagents": host, "safety": safety_check(engine)}
    if mcp is not None:
        mcp.turn_extra(extra)              # the gate's "server gone" errors, as for the parent
    if isolated:
        extra["write_root"] = rec.workdir
    settings = TurnSettings(
        model=rec.model, instructions=f"{instructions}\n\n{block}" if instructions else block,
        tools=specs, make_provider=provider_factory(engine, rec.model), reasoning_effort=wire_effort(info, rec.effort),
        max_output_tokens=out_tokens, session_id=engine.session_id, cwd=rec.workdir,
        retry_attempts=_retry_attempts(engine), read_timeout=read_timeout,
        connect_timeout=float(engine.config.get("connect_timeout_seconds") or 30),
        agent_path=rec.path, subagent_id=rec.path, max_tool_calls=max_tool_calls,
        tool_runner=isolated_runner(rec.workdir) if isolated else run_tool,
        project_output=project_model_output, extra=extra)
    key = rec.key

    def post(ev: dict) -> None:
        engine.post({"type": "_subagent", "key": key, "event": ev})

    ctx = TurnContext(turn_id=-key, settings=settings, live=engine.live, post=post, pool=engine.pool,
                      read_state={}, shell_sessions=engine.shell(), profile_dir=str(engine.profile),
                      config=engine.config.data, hooks=engine.ext.hooks_runner())
    extra["_input"] = list(input_items) + [task_item(rec.path, rec.message)]
    return ctx


def run_child(ctx, isolated: bool) -> None:
    """Worker job: the child's whole turn. Its ``_turn_end`` is held back until the changed
    files are known so the main thread sees the final state in one message."""
    from ..turn import run_turn
    held: dict = {}
    post = ctx.post

    def holding_post(ev: dict) -> None:
        if ev.get("type") == "_turn_end":
            held.update(ev)
        else:
            post(ev)
    ctx.post = holding_post
    try:
        run_turn(ctx, ctx.settings.extra.pop("_input"))
    finally:
        end = dict(held) if held else {"type": "_turn_end", "ok": False, "error": "subagent stopped"}
        if isolated:
            try:
                end["files_changed"] = files_changed(ctx.settings.cwd)
            except Exception:
                log.exception("files_changed failed")
        post(end)
