"""The agent loop of one turn, run on a worker thread: request, stream, gate, run tools, repeat.

The worker owns nothing of the engine: it receives a :class:`TurnContext` (settings, the
interrupt flag, the steer inbox, the approval channel) and talks back only by posting
messages. Public events (``{"type": ...}``) are written as they are; internal ones start with
``_`` and let the main thread record items, usage and the turn's end.
"""

from __future__ import annotations

import logging
import queue
import threading
from dataclasses import dataclass, field
from typing import Callable, Optional

import orjson

from .approvals import LiveSettings
from .llm.base import Interrupted, ModelError, ModelRequest, StreamEvent
from .tools.base import ToolContext, ToolSpec, is_error_result, text_output

log = logging.getLogger("jucode.turn")

PARALLEL_TOOLS = frozenset({"read", "ls", "ripgrep", "outline"})
EMPTY_REPLY_REMINDERS = 2
EMPTY_REPLY_TEXT = ("You have not made visible progress in your last reply. Continue the task: use your tools "
                    "or give the user a final answer; do not stop after exploring.")


class TurnInterrupted(Exception):
    pass


@dataclass
class TurnSettings:
    model: str
    instructions: str
    tools: list                               # list[ToolSpec] offered to the model
    make_provider: Callable[[], object]       # builds the wire provider (lazy heavy imports)
    reasoning_effort: str = ""
    max_output_tokens: int = 0
    session_id: str = ""
    cwd: str = "."
    retry_attempts: int = 5
    read_timeout: float = 300.0
    connect_timeout: float = 30.0
    agent_path: str = "/root"
    subagent_id: Optional[str] = None
    plan_mode_tools: bool = False
    max_tool_calls: int = 0                   # 0 = unlimited (subagents set a budget)
    tool_runner: Optional[Callable] = None    # (spec, raw_args, ctx) -> (result, is_error)
    project_output: Optional[Callable] = None # (name, raw_output, cwd) -> model output str
    extra: dict = field(default_factory=dict)


@dataclass
class TurnContext:
    turn_id: int
    settings: TurnSettings
    live: LiveSettings
    post: Callable[[dict], None]
    pool: object
    interrupt: threading.Event = field(default_factory=threading.Event)
    steer_inbox: queue.Queue = field(default_factory=queue.Queue)
    read_state: dict = field(default_factory=dict)
    shell_sessions: object = None
    profile_dir: str = ""
    config: dict = field(default_factory=dict)
    hooks: object = None                      # project hooks runner (pre/post tool use)
    start_mode: str = ""                      # approval mode when the turn began ("" = follow live)

    def __post_init__(self) -> None:
        if not self.start_mode:
            self.start_mode = self.live.mode

    def emit(self, ev: dict) -> None:
        ev = dict(ev)
        ev["_turn"] = self.turn_id
        self.post(ev)

    def check(self) -> None:
        if self.interrupt.is_set():
            raise TurnInterrupted()


def run_turn(ctx: TurnContext, input_items: list) -> None:
    """Entry point on the worker thread. Always ends by posting ``_turn_end`` (unless interrupted)."""
    try:
        _loop(ctx, list(input_items))
        ctx.emit({"type": "_turn_end", "ok": True})
    except (TurnInterrupted, Interrupted):
        ctx.emit({"type": "_turn_end", "ok": False, "interrupted": True})
    except ModelError as e:
        ctx.emit({"type": "_turn_end", "ok": False, "error": e.message})
    except Exception as e:  # the engine never dies of a turn
        log.exception("turn failed")
        ctx.emit({"type": "_turn_end", "ok": False, "error": f"internal error: {e}"})


def _loop(ctx: TurnContext, items: list) -> None:
    s = ctx.settings
    reminders = 0
    tool_calls_made = 0
    provider = s.make_provider()
    while True:
        ctx.check()
        _drain_steers(ctx, items)
        response = _request(ctx, provider, items)
        items.extend(response.items)
        ctx.emit({"type": "_response", "items": response.items, "usage": response.usage.as_event_fields()})
        calls = [it for it in response.items if it.get("type") == "function_call"]
        if not calls:
            visible = any(_item_text(it) for it in response.items)
            if not visible and reminders < EMPTY_REPLY_REMINDERS:
                reminders += 1
                reminder = {"role": "user", "content": [{"type": "input_text", "text": EMPTY_REPLY_TEXT}]}
                items.append(reminder)
                ctx.emit({"type": "_item", "item": reminder})
                continue
            return
        for call in calls:
            if not call.get("call_id"):
                # its output could not be paired with the call: fail the turn like upstream
                raise ModelError(f"tool call {call.get('name') or 'unknown'} is missing call_id")
        reminders = 0
        tool_calls_made += len(calls)
        if s.max_tool_calls and tool_calls_made > s.max_tool_calls:
            raise ModelError(f"subagent exceeded tool budget ({s.max_tool_calls})")
        outputs, ends_turn = run_tool_batch(ctx, calls)
        for out in outputs:
            items.append(out["item"])
        for out in outputs:
            if out.get("image_item"):
                items.append(out["image_item"])
        if ends_turn:
            return


def _item_text(item: dict) -> str:
    if item.get("type") == "message":
        return "".join(p.get("text", "") for p in item.get("content") or [] if isinstance(p, dict)).strip()
    return ""


def _drain_steers(ctx: TurnContext, items: list) -> None:
    while True:
        try:
            msg = ctx.steer_inbox.get_nowait()
        except queue.Empty:
            return
        item = msg["item"]
        items.append(item)
        ctx.emit({"type": "_steered", "message": msg})


def _request(ctx: TurnContext, provider, items: list):
    from .llm.retry import stream_with_retry
    s = ctx.settings
    req = ModelRequest(model=s.model, instructions=s.instructions, input=items,
                       tools=[t.definition() for t in s.tools], reasoning_effort=s.reasoning_effort,
                       max_output_tokens=s.max_output_tokens, session_id=s.session_id,
                       read_timeout=s.read_timeout, connect_timeout=s.connect_timeout)
    state = {"text_started": False}
    plan_parsers: dict = {}

    def sink(ev: StreamEvent) -> None:
        if ctx.interrupt.is_set():
            raise Interrupted()
        if ev.kind == "headers":
            state["text_started"] = False
            ctx.emit({"type": "thinking_start"})
        elif ev.kind == "text":
            if not state["text_started"]:
                state["text_started"] = True
                ctx.emit({"type": "assistant_start"})
            ctx.emit({"type": "assistant_delta", "delta": ev.delta})
        elif ev.kind == "reasoning":
            ctx.emit({"type": "reasoning_delta", "delta": ev.delta})
        elif ev.kind == "tool_args" and ev.name == "propose_plan":
            _plan_draft(ctx, plan_parsers, ev)

    def on_retry(attempt, max_attempts, reason, delay_ms):
        state["text_started"] = False
        ctx.emit({"type": "retrying", "attempt": attempt, "max_attempts": max_attempts,
                  "reason": reason, "delay_ms": delay_ms})
        ctx.emit({"type": "connecting"})

    ctx.check()
    ctx.emit({"type": "connecting"})
    return stream_with_retry(provider, req, sink, ctx.interrupt, attempts=s.retry_attempts, on_retry=on_retry)


def _plan_draft(ctx: TurnContext, parsers: dict, ev: StreamEvent) -> None:
    try:
        from .planmode import PartialPlanParser
    except ImportError:
        return
    parser = parsers.get(ev.call_id)
    if parser is None:
        parser = parsers[ev.call_id] = PartialPlanParser()
        plan_id = parsers[ev.call_id + ":id"] = ctx.settings.extra.get("new_plan_id", lambda: "plan-draft")()
        # the plan host gives the finished proposed_plan this same id
        ctx.emit({"type": "_plan_draft_id", "call_id": ev.call_id, "id": plan_id})
    title, append = parser.feed(ev.delta)
    # Only news: most chunks (keys, the title's own JSON, punctuation) change nothing visible.
    if append or title != parsers.get(ev.call_id + ":title", ""):
        parsers[ev.call_id + ":title"] = title
        ctx.emit({"type": "plan_draft", "id": parsers[ev.call_id + ":id"], "title": title, "append": append})


# -- tools ----------------------------------------------------------------------------------

def run_tool_batch(ctx: TurnContext, calls: list) -> tuple[list, bool]:
    """Gate every call first (approvals one at a time), then run the approved ones."""
    from .tool_gate import gate_call
    approved, blocked = [], []
    specs = {t.name: t for t in ctx.settings.tools}
    for call in calls:
        ctx.check()
        decision = gate_call(ctx, call, specs)
        if decision.result is not None:
            blocked.append((call, decision.result))
        else:
            approved.append((call, decision))
    results = []
    parallel = len(approved) >= 2 and all(c.get("name") in PARALLEL_TOOLS for c, _ in approved)
    if parallel:
        for call, _ in approved:
            ctx.emit({"type": "tool_start", "call_id": call["call_id"], "name": call["name"]})
        futures = [ctx.pool.submit(_execute, ctx, call, d, name="tool") for call, d in approved]
        for (call, _), fut in zip(approved, futures):
            result = fut.result()
            ctx.check()
            results.append(_finish(ctx, call, result))
    else:
        for call, d in approved:
            ctx.check()
            ctx.emit({"type": "tool_start", "call_id": call["call_id"], "name": call["name"]})
            results.append(_finish(ctx, call, _execute(ctx, call, d)))
    for call, result in blocked:
        ctx.emit({"type": "tool_start", "call_id": call["call_id"], "name": call["name"]})
        results.append(_finish(ctx, call, result))
    ends = any(c.get("name") == "propose_plan" and not is_error_result(r["raw"]) for c, r in
               ((r["call"], r) for r in results))
    return results, ends


def _execute(ctx: TurnContext, call: dict, decision) -> dict:
    spec: Optional[ToolSpec] = decision.spec
    args = decision.arguments
    name = call.get("name") or "unknown"
    if spec is None:
        return {"error": f"unknown tool: {name}"}

    def progress(text: str) -> None:
        ctx.emit({"type": "tool_update", "call_id": call["call_id"], "name": name, "output": text})

    tctx = ToolContext(cwd=ctx.settings.cwd, interrupt=ctx.interrupt, progress=progress,
                       read_state=ctx.read_state, profile_dir=ctx.profile_dir, config=ctx.config,
                       shell_sessions=ctx.shell_sessions, agent_path=ctx.settings.agent_path,
                       call_id=call["call_id"], extra=ctx.settings.extra,
                       write_root=ctx.settings.extra.get("write_root"))
    runner = ctx.settings.tool_runner
    try:
        if runner is not None:
            result, _ = runner(spec, args, tctx)
        else:
            parsed = orjson.loads(args or "{}")
            result = spec.run(parsed if isinstance(parsed, dict) else {}, tctx)
    except Exception as e:  # nothing raises out of a tool
        log.exception("tool %s failed", name)
        result = {"error": f"{name} failed: {e}"}
    if decision.post_process is not None:
        result = decision.post_process(result)
    return result


def _finish(ctx: TurnContext, call: dict, result) -> dict:
    """Emit tool_output (raw) and produce the projected item for the model."""
    name = call.get("name") or "unknown"
    raw = result if isinstance(result, str) else text_output(result)
    if raw is None:
        raw = orjson.dumps(result).decode()
    err = is_error_result(result) if isinstance(result, dict) else False
    model_out = raw
    image_item = None
    if isinstance(result, dict) and result.get("kind") == "image" and result.get("base64"):
        image_item = {"role": "user", "content": [{"type": "input_image",
                      "image_url": f"data:{result.get('mime', 'image/png')};base64,{result['base64']}"}]}
    if ctx.settings.project_output is not None:
        try:
            model_out = ctx.settings.project_output(name, raw, ctx.settings.cwd)
        except Exception:  # projection is best effort; the raw output still reaches the model
            log.exception("projection failed")
    item = {"type": "function_call_output", "call_id": call["call_id"], "output": model_out}
    if err:
        item["is_error"] = True          # Anthropic uses it; the Responses converter strips it
    ctx.emit({"type": "_tool_result", "call_id": call["call_id"], "name": name, "item": item,
              "image_item": image_item, "raw": raw, "is_error": err})
    ctx.emit({"type": "tool_output", "call_id": call["call_id"], "name": name, "output": raw, "is_error": err})
    return {"call": call, "item": item, "image_item": image_item, "raw": result}
