"""SubagentsHost: the engine hooks of the subagent subsystem (main thread).

What it does for the engine:
- offers the five subagent tools every turn and a per-turn :class:`Manager` to them;
- unwraps children's worker messages (``_subagent``): traces them, counts usage, forwards
  approval requests to the engine's normal approval path (they carry ``subagent_id``), and turns
  a child's turn end into ``completed``/``errored``;
- emits ``subagent_lifecycle`` on every state change and ``agent_runs`` at most twice a second
  while children work (at once after a lifecycle change), from :meth:`tick`;
- closes children when the parent turn is interrupted or ends, and enforces child deadlines;
- answers the ``agent_runs`` and ``subagent_transcript`` ops.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import deque
from typing import Optional

from .records import (ARCHIVED_TURNS, MAX_LIVE, AgentRecord, Manager, cap_output, check_task_name, now_ms,
                      resolve_target)

log = logging.getLogger("jucode.subagents")

PUSH_INTERVAL = 0.5
# Error texts that mean "the request overflowed the context window" (upstream's list).
OVERFLOW_MARKERS = ("context_length_exceeded", "maximum context length", "prompt is too long", "prompt too long",
                    "exceeds the context window", "input exceeds the context", "exceed context limit", "上下文过长")
_keys = itertools.count(1)


class SubagentsHost:
    def __init__(self, engine):
        self.engine = engine
        self.current: Optional[Manager] = None
        self.archive: deque = deque(maxlen=ARCHIVED_TURNS)
        self._by_key: dict[int, AgentRecord] = {}
        self._rev = 0                      # bumps on any visible change (agent_runs content)
        self._pushed_rev = 0
        self._lifecycle_pending = False
        self._last_push = 0.0
        self._cond = threading.Condition()
        self._version = 0                  # bumps on state changes (wakes wait_agent)
        self._timed: list = []             # live agents with a deadline: tick looks at these only

    # -- hooks: turns ------------------------------------------------------------------------------
    def tool_specs(self) -> list:
        from .tools import subagent_tool_specs
        return subagent_tool_specs(self.engine)

    def turn_extra(self, extra: dict) -> None:
        # build_turn numbers the turn before it gathers extras, so this is the new turn's id.
        mgr = Manager(turn_id=self.engine._turn_seq)
        if self.current is not None and self.current.agents and self.current not in self.archive:
            self._archive(self.current)
        self.current = mgr
        extra["subagents"] = self

    def turn_finished(self, turn, error) -> None:
        if not error:
            reason = "parent turn finished"
        elif any(m in str(error).lower() for m in OVERFLOW_MARKERS):
            reason = "parent turn hit the context window"
        else:
            reason = "parent turn failed"
        self._end_turn(turn, reason)

    def turn_interrupted(self, turn) -> None:
        self._end_turn(turn, "parent interrupted")

    def _end_turn(self, turn, reason: str) -> None:
        mgr = self.current
        if mgr is None or mgr.turn_id != getattr(turn, "id", None):
            return
        for rec in list(mgr.agents.values()):
            if rec.live:
                self._close(rec, reason)
        mgr.closed = True
        if mgr.agents:
            self._archive(mgr)
        self.current = None

    def _archive(self, mgr: Manager) -> None:
        """Keep a finished turn's agents listed; the oldest of ARCHIVED_TURNS turns drops out,
        and with it its records' routing keys (so nothing grows over a long session)."""
        if len(self.archive) == self.archive.maxlen:
            for rec in self.archive[0].agents.values():
                self._by_key.pop(rec.key, None)
        self.archive.append(mgr)

    def close(self) -> None:
        """Shutdown: stop every child still running."""
        for rec in list(self._by_key.values()):
            if rec.live:
                self._stop_worker(rec)

    # -- tool backends (called on the main thread via call_main) -------------------------------------
    def _manager(self) -> Manager:
        mgr = self.current
        turn = self.engine.turn
        if mgr is None or mgr.closed or turn is None or turn.id != mgr.turn_id:
            raise ValueError("no active turn")
        if mgr.instructions is None:
            mgr.instructions = turn.ctx.settings.instructions
        return mgr

    def reserve(self, caller: str, args: dict, tool_use_id: str):
        """Validate a spawn and reserve its slot (``pending``). Returns (record, options)."""
        from .child import validate_fork
        mgr = self._manager()
        name = args.get("task_name")
        err = check_task_name(name)
        if err:
            raise ValueError(err)
        message = args.get("message")
        if not isinstance(message, str) or not message.strip():
            raise ValueError("message is required")
        model, effort = self._pick_model(args.get("model"), args.get("reasoning_effort"))
        max_calls = args.get("max_tool_calls")
        if max_calls is not None and (not isinstance(max_calls, int) or isinstance(max_calls, bool) or max_calls < 1):
            raise ValueError("max_tool_calls must be at least 1")
        timeout = args.get("timeout_secs")
        if timeout is not None and (not isinstance(timeout, int) or isinstance(timeout, bool) or timeout < 10):
            raise ValueError("timeout_secs must be at least 10")
        max_out = args.get("max_output_tokens")
        if max_out is not None and (not isinstance(max_out, int) or isinstance(max_out, bool) or max_out < 0):
            raise ValueError("max_output_tokens must be a positive integer")
        fork = validate_fork(args.get("fork_turns"))
        isolation = args.get("isolation") or "none"
        if isolation not in ("none", "worktree"):
            raise ValueError(f'isolation must be "none" or "worktree", got "{isolation}"')
        path = f"{caller.rstrip('/')}/{name}"
        if path in mgr.agents:
            raise ValueError(f"agent already exists: {path}")
        if sum(1 for a in mgr.children_of(caller) if a.live) >= MAX_LIVE:   # each agent's own children
            raise ValueError(f"too many live agents ({MAX_LIVE}); wait for or close an agent first")
        rec = AgentRecord(key=next(_keys), path=path, task_name=name, parent=caller, message=message,
                          model=model, effort=effort, tool_use_id=tool_use_id or "", turn_id=mgr.turn_id,
                          workdir=self._caller_cwd(caller), isolation=isolation)
        mgr.agents[path] = rec
        self._by_key[rec.key] = rec
        self._lifecycle(rec, "pending", "reserved")
        opts = {"fork": fork, "max_tool_calls": max_calls or 0, "timeout_secs": timeout,
                "max_output_tokens": max_out, "isolation": isolation}
        return rec, opts

    def _caller_cwd(self, caller: str) -> str:
        mgr = self.current
        parent = mgr.agents.get(caller) if mgr is not None else None
        return parent.workdir if parent is not None and parent.workdir else self.engine.cwd

    def _pick_model(self, model, effort) -> tuple[str, str]:
        from ..models import resolve_model_info
        engine = self.engine
        if model is not None and not isinstance(model, str):
            raise ValueError("model must be a string")
        if not model or model == engine.model:
            model = engine.model
        else:
            allowed = [e.get("name") for e in (engine.config.get("subagent_models") or [])
                       if isinstance(e, dict) and e.get("name")]
            if model not in allowed:
                raise ValueError(f'model "{model}" is not allowed for subagents; allowed: '
                                 f'{", ".join([engine.model] + allowed)}')
        info = resolve_model_info(engine.config.data, model)
        efforts = list(info.reasoning_efforts or [])
        if effort:
            if not isinstance(effort, str) or (efforts and effort not in efforts):
                raise ValueError(f'reasoning_effort "{effort}" is not supported by {model}; '
                                 f'supported: {", ".join(efforts)}')
            return model, effort
        return model, (efforts[0] if efforts else engine.effective_effort())

    def abandon(self, rec: AgentRecord, error: str) -> None:
        if rec.live:
            self._set_final(rec, "errored", error=error)

    def start(self, rec: AgentRecord, opts: dict) -> dict:
        """Build the child's turn and submit it to the worker pool (``running``)."""
        from .child import build_child_context, fork_items, run_child
        mgr = self._manager()
        if not rec.live:
            raise ValueError(f"agent is not running: {rec.path}")
        items = fork_items(self._fork_source(mgr, rec.parent), opts["fork"]) if opts["fork"] != "none" else []
        ctx = build_child_context(self.engine, self, rec, mgr.instructions or "", items,
                                  max_tool_calls=opts["max_tool_calls"], timeout_secs=opts["timeout_secs"],
                                  max_output_tokens=opts["max_output_tokens"])
        rec.ctx = ctx
        rec.conversation = list(ctx.settings.extra["_input"])
        if opts["timeout_secs"]:
            rec.deadline = time.monotonic() + float(opts["timeout_secs"])
            self._timed.append(rec)
        rec.state = "running"
        self._lifecycle(rec, "running", "started")
        self.engine.pool.submit(run_child, ctx, rec.isolation == "worktree", name=f"subagent {rec.path}")
        return {"task_name": rec.task_name, "path": rec.path, "status": "running", "workdir": rec.workdir}

    def _fork_source(self, mgr: Manager, caller: str) -> list:
        """What fork_turns copies from: a child's own conversation when a child spawns,
        the session's when the root agent does."""
        parent = mgr.agents.get(caller)
        if parent is not None:
            return list(parent.conversation)
        return self.engine.sessions.request_items()

    def wait_check(self, caller: str, targets) -> tuple[bool, dict]:
        mgr = self._manager()
        if targets:
            recs = []
            for t in targets:
                path = resolve_target(caller, t)
                rec = mgr.agents.get(path)
                if rec is None:
                    raise ValueError(f"agent not found: {path}")
                recs.append(rec)
            ready = any(not r.live for r in recs)
        else:
            recs = mgr.children_of(caller)
            ready = any(not r.live for r in recs) or not any(r.live for r in recs)
        return ready, {r.path: r.status_json() for r in recs}

    def list_rows(self, prefix: Optional[str]) -> list:
        mgr = self._manager()
        return [r.list_row() for r in mgr.agents.values() if prefix is None or r.path.startswith(prefix)]

    def send(self, caller: str, target: str, message: str) -> dict:
        from .child import mail_item
        mgr = self._manager()
        path = resolve_target(caller, target)
        rec = mgr.agents.get(path)
        if rec is None:
            raise ValueError(f"agent not found: {path}")
        if not rec.live or rec.ctx is None:
            raise ValueError(f"agent is not running: {path}")
        rec.ctx.steer_inbox.put({"queued": None, "item": mail_item(message), "text": message})
        self._lifecycle(rec, "message", "queued message")
        return {"target": path, "delivered": True, "status": "queued"}

    def close_target(self, caller: str, target: str) -> dict:
        mgr = self._manager()
        path = resolve_target(caller, target)
        rec = mgr.agents.get(path)
        if rec is None:
            raise ValueError(f"agent not found: {path}")
        previous = rec.state
        if rec.live:
            self._close(rec, "close requested")
        return {"target": path, "previous_status": previous, "closed": True}

    # -- waiting (worker side, thread-safe) -----------------------------------------------------------
    @property
    def version(self) -> int:
        with self._cond:
            return self._version

    def wait_change(self, version: int, deadline: float, interrupt: threading.Event) -> bool:
        """Block until an agent state changes (True), or the deadline/interrupt (False)."""
        with self._cond:
            while self._version == version:
                if interrupt.is_set():
                    return False
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.05))
            return True

    def _changed(self) -> None:
        with self._cond:
            self._version += 1
            self._cond.notify_all()

    # -- state changes ------------------------------------------------------------------------------
    def _lifecycle(self, rec: AgentRecord, status: str, message: str) -> None:
        self.engine.emit({"type": "subagent_lifecycle", "path": rec.path, "status": status, "message": message,
                          "label": rec.task_name, "model": rec.model, "tool_use_id": rec.tool_use_id})
        self._rev += 1
        self._lifecycle_pending = True
        self._changed()

    def _stop_worker(self, rec: AgentRecord) -> None:
        ctx = rec.ctx
        if ctx is None:
            return
        ctx.interrupt.set()     # streams and shell commands poll it and stop within ~50 ms

    def _deny_approvals(self, rec: AgentRecord) -> None:
        from ..approvals import ApprovalAnswer
        approvals = self.engine.approvals
        for call_id, a in list(approvals.items()):
            if a.subagent_id == rec.path:
                del approvals[call_id]
                a.resolve(ApprovalAnswer("deny"))

    def _set_final(self, rec: AgentRecord, state: str, error: Optional[str] = None, message: str = "") -> None:
        rec.state = state
        rec.completed_at_ms = now_ms()
        rec.error = error
        rec.trace.finish(state == "completed")
        rec.conversation = []
        self._stop_worker(rec)
        self._deny_approvals(rec)
        self._lifecycle(rec, state, message or error or state)
        # a finished agent's own children go with it
        mgr = self._manager_of(rec)
        if mgr is not None:
            reason = {"completed": "parent turn finished", "errored": "parent turn failed"}.get(state, message)
            for child in mgr.children_of(rec.path):
                if child.live:
                    self._close(child, reason or "parent turn finished")

    def _close(self, rec: AgentRecord, reason: str) -> None:
        self._set_final(rec, "closed", message=reason)

    def _manager_of(self, rec: AgentRecord) -> Optional[Manager]:
        if self.current is not None and self.current.turn_id == rec.turn_id:
            return self.current
        for mgr in self.archive:
            if mgr.turn_id == rec.turn_id:
                return mgr
        return None

    def _fold_usage(self, rec: AgentRecord) -> None:
        """A finished child's usage joins the session totals, priced at the child's model."""
        from ..models import cost_of, resolve_model_info
        engine = self.engine
        for k in engine.totals:
            engine.totals[k] += int(rec.usage.get(k) or 0)
        engine.cost += cost_of(resolve_model_info(engine.config.data, rec.model), rec.usage)
        engine.sessions.emit_context_usage()

    # -- children's worker messages ---------------------------------------------------------------------
    def internal(self, msg: dict) -> bool:
        if msg.get("type") != "_subagent":
            return False
        rec = self._by_key.get(msg.get("key"))
        ev = msg.get("event") or {}
        t = ev.get("type", "")
        if rec is None or not rec.live:
            if t == "_approval":
                from ..approvals import ApprovalAnswer
                ev["approval"].resolve(ApprovalAnswer("deny"))
            return True
        try:
            self._child_event(rec, ev, t)
        except Exception:  # a child's bookkeeping must never take the engine down
            log.exception("subagent event %s failed", t)
        return True

    def _child_event(self, rec: AgentRecord, ev: dict, t: str) -> None:
        tr = rec.trace
        self._rev += 1
        if t == "_approval":
            ev.pop("_turn", None)
            self.engine.handle_worker_message(ev)      # allowlist, deferral or approval_request
        elif t == "_response":
            for k, v in (ev.get("usage") or {}).items():
                if k in rec.usage:
                    rec.usage[k] += int(v or 0)
            texts = []
            rec.conversation.extend(ev.get("items") or [])
            for item in ev.get("items") or []:
                if item.get("type") == "function_call":
                    tr.remember_args(item.get("call_id") or "", item.get("arguments") or "")
                elif item.get("type") == "message":
                    texts.append("".join(p.get("text", "") for p in item.get("content") or []
                                         if isinstance(p, dict)))
            text = "".join(texts).strip()
            if text:
                rec.last_text = text
        elif t == "_steered":
            rec.conversation.append(ev["message"]["item"])
            tr.add_user(ev["message"].get("text") or "")
        elif t == "_tool_result":
            rec.conversation.append(ev["item"])
            if ev.get("image_item"):
                rec.conversation.append(ev["image_item"])
        elif t == "_item":
            rec.conversation.append(ev["item"])
        elif t == "assistant_delta":
            tr.delta("assistant", ev.get("delta") or "")
        elif t == "reasoning_delta":
            tr.delta("reasoning", ev.get("delta") or "")
        elif t in ("connecting", "thinking_start"):
            tr.set_activity("Thinking")
        elif t == "retrying":
            tr.set_activity(f"Retrying {ev.get('attempt')}/{ev.get('max_attempts')}: {ev.get('reason') or ''}")
        elif t == "tool_start":
            rec.tool_calls += 1
            if ev.get("name") not in rec.tools_used:
                rec.tools_used.append(ev.get("name"))
            tr.tool_start(ev.get("call_id") or "", ev.get("name") or "")
        elif t == "tool_update":
            tr.tool_update(ev.get("call_id") or "", ev.get("output") or "")
        elif t == "tool_output":
            tr.tool_output(ev.get("call_id") or "", ev.get("name") or "", ev.get("output") or "",
                           bool(ev.get("is_error")))
        elif t == "_turn_end":
            self._child_ended(rec, ev)

    def _child_ended(self, rec: AgentRecord, ev: dict) -> None:
        rec.files_changed = list(ev.get("files_changed") or [])
        if ev.get("ok"):
            rec.summary = cap_output(rec.last_text)
            self._set_final(rec, "completed", message="finished")
        elif rec.timed_out:
            self._set_final(rec, "errored", error="subagent timed out")
        elif ev.get("interrupted"):
            self._set_final(rec, "interrupted", message="interrupted")
            return                                      # an interrupted child contributes nothing
        else:
            self._set_final(rec, "errored", error=ev.get("error") or "subagent failed")
        self._fold_usage(rec)

    # -- periodic -------------------------------------------------------------------------------------
    def tick(self) -> None:
        if self._timed:
            self._check_deadlines()
        if self._rev == self._pushed_rev:
            return
        now = time.monotonic()
        if self._lifecycle_pending or now - self._last_push >= PUSH_INTERVAL:
            self._push(now)

    def _check_deadlines(self) -> None:
        """An agent past its timeout_secs ends ``errored`` at once (its worker is stopped but
        not waited for, so a wait_agent sees the timeout even if the worker is slow to unwind)."""
        now = time.monotonic()
        for rec in list(self._timed):
            if not rec.live:
                self._timed.remove(rec)
            elif now >= rec.deadline:
                self._timed.remove(rec)
                rec.timed_out = True
                self._set_final(rec, "errored", error="subagent timed out")
                self._fold_usage(rec)

    def _push(self, now: float) -> None:
        self._pushed_rev = self._rev
        self._lifecycle_pending = False
        self._last_push = now
        self.engine.emit(self.agent_runs_event())

    def all_records(self) -> list:
        out = []
        for mgr in list(self.archive) + ([self.current] if self.current is not None else []):
            out.extend(mgr.agents.values())
        return out

    def agent_runs_event(self) -> dict:
        return {"type": "agent_runs", "workflows": [], "agents": [r.run_row() for r in self.all_records()]}

    # -- ops ------------------------------------------------------------------------------------------
    def ops(self) -> dict:
        return {"agent_runs": _op_agent_runs, "subagent_transcript": _op_subagent_transcript}

    def transcript_event(self, agent_id) -> dict:
        for rec in reversed(self.all_records()):
            if rec.path == agent_id:
                return {"type": "subagent_transcript", "agent_id": agent_id, "items": rec.trace.snapshot()}
        return {"type": "subagent_transcript", "agent_id": agent_id, "error": f"unknown agent: {agent_id}"}

    def doctor_lines(self) -> list:
        live = sum(1 for r in self.all_records() if r.live)
        return [f"subagents: {live} live, {len(self.all_records())} listed"]


def _op_agent_runs(engine, op: dict) -> None:
    host = engine.ext.host("SubagentsHost")
    host._pushed_rev = host._rev
    host._lifecycle_pending = False
    host._last_push = time.monotonic()
    engine.emit(host.agent_runs_event())


def _op_subagent_transcript(engine, op: dict) -> None:
    host = engine.ext.host("SubagentsHost")
    agent_id = op.get("agent_id")
    # A desktop client polls this op, sometimes without an id, every 2.5 s while agents run:
    # answer in the op's own event (as upstream does for any unknown id) rather than with an
    # `error` event, which clients show as a toast.
    engine.emit(host.transcript_event(agent_id if isinstance(agent_id, str) else ""))
