"""GoalsHost: the session goal and the plan checklist inside the running engine.

The pure logic is in :mod:`jucode.goals`; this host owns the state (main thread only), offers
the goal tools and ``update_plan`` to the main agent (their state changes hop to the main thread
through ``ctx.extra["call_main"]``), charges every turn's tokens to the goal, keeps the goal in
the session file, and starts goal-continuation turns while the engine is idle.
"""

from __future__ import annotations

import logging
import time
from typing import Optional

from .commands import command
from .goals import (GOAL_TOOL_PARAMETERS, GOAL_USAGE, Goal, account_turn, continuation_info,
                    continuation_text, goal_command, goal_event, run_goal_tool, update_plan_tool,
                    wants_continuation)

log = logging.getLogger("jucode.goals")

_DESCRIPTIONS = {
    "get_goal": "Return the session goal (objective, status, token budget and usage), or null.",
    "create_goal": "Set a standing goal for this session; the engine keeps working toward it between "
                   "user messages until it is complete, blocked or out of budget.",
    "update_goal": "Mark the session goal complete (after verifying it) or blocked (when you need the user).",
    "update_plan": "Replace the visible plan checklist: steps with status pending, in_progress or completed.",
}


class GoalsHost:
    def __init__(self, engine):
        self.engine = engine
        self.goal: Optional[Goal] = None
        self.plan: list = []
        self._store = None                     # the session store the goal was last synced with
        self._session_id = engine.session_id
        self._turn_base: Optional[dict] = None
        self._turn_t0 = 0.0
        self.suspended = False                 # no continuation after an error/interrupt until the user acts

    # -- state --------------------------------------------------------------------------------
    def set_goal(self, goal: Optional[Goal], emit: bool = True) -> None:
        self.goal = goal
        self._persist()
        if emit:
            self.engine.emit(goal_event(goal))

    def _persist(self) -> None:
        sessions = self.engine.sessions
        store = sessions.store
        if store is None and self.goal is not None:
            ensure = getattr(sessions, "_ensure_store", None)
            try:
                store = ensure() if ensure is not None else None
            except Exception as e:  # the goal still works in memory
                log.warning("cannot create the session for the goal: %s", e)
                store = None
        if store is not None and hasattr(store, "set_goal"):
            try:
                store.set_goal(self.goal.to_dict() if self.goal is not None else None)
            except Exception as e:
                self.engine.emit({"type": "error", "message": f"failed to save session: {e}"})
        self._store = store

    def _sync_session(self) -> None:
        """Follow /new and /resume: load the goal of the session now active (O(1) when unchanged)."""
        engine = self.engine
        store = engine.sessions.store
        sid = engine.session_id
        if store is self._store and sid == self._session_id:
            return
        switched = sid != self._session_id
        self._session_id = sid
        self._store = store
        if not switched:
            if store is not None and self.goal is not None:
                self._persist()                # the session file appeared after the goal was set
            return
        loaded = Goal.from_dict(getattr(store, "goal", None)) if store is not None else None
        self.plan = []
        self.suspended = False
        if loaded is not None or self.goal is not None:
            self.goal = loaded
            engine.emit(goal_event(loaded))

    # -- hooks from the engine -------------------------------------------------------------------
    def tick(self) -> None:
        self._sync_session()

    def tool_specs(self) -> list:
        from .tools.base import GATE_READ, ToolSpec
        specs = []
        for name in ("get_goal", "create_goal", "update_goal", "update_plan"):
            specs.append(ToolSpec(name=name, description=_DESCRIPTIONS[name],
                                  parameters=GOAL_TOOL_PARAMETERS[name], run=self._tool_runner(name),
                                  gate=GATE_READ))
        return specs

    def _tool_runner(self, name: str):
        def run(args: dict, ctx) -> dict:      # worker thread
            call_main = ctx.extra.get("call_main")
            if call_main is None:
                return {"error": f"{name} is only available to the main agent"}
            result = call_main(lambda: self._run_tool(name, args))
            if result is None:
                return {"error": f"{name} was interrupted"}
            return result
        return run

    def _run_tool(self, name: str, args: dict) -> dict:   # main thread
        if name == "update_plan":
            out, steps, ev = update_plan_tool(args)
            if steps is not None:
                self.plan = steps
            if ev is not None:
                self.engine.emit(ev)
            return out
        res = run_goal_tool(name, self.goal, args)
        self.set_goal(res.goal)                # upstream: every goal tool call emits goal and saves
        if res.goal is not None and res.goal.status == "active":
            self.suspended = False
        return res.output

    def turn_extra(self, extra: dict) -> None:
        self._turn_base = dict(self.engine.totals)
        self._turn_t0 = time.monotonic()

    def user_prompt_blocked(self, msg) -> None:
        self.suspended = False                 # the user is back: continuation may run again
        return None

    def _account(self) -> None:
        base, self._turn_base = self._turn_base, None
        if base is None or self.goal is None:
            return
        now = self.engine.totals

        def delta(k: str) -> int:
            return max(0, int(now.get(k, 0)) - int(base.get(k, 0)))
        tokens = max(0, delta("input_tokens") - delta("cached_input_tokens")) + delta("output_tokens")
        if account_turn(self.goal, tokens, time.monotonic() - self._turn_t0):
            self.set_goal(self.goal)

    def turn_finished(self, turn, error) -> None:
        self._account()
        if error:
            self.suspended = True

    def turn_interrupted(self, turn) -> None:
        self._account()
        self.suspended = True

    def idle_tick(self) -> bool:
        engine = self.engine
        if self.suspended or not wants_continuation(self.goal) or engine.turn is not None or engine.queue:
            return False
        if engine.sessions.busy():
            return False
        engine.emit({"type": "info", "message": continuation_info(self.goal)})
        engine.sessions.append({"type": "goal_context", "content": continuation_text(self.goal)})
        engine.start_turn(None)
        if engine.turn is None:                # could not start (no key, bad prompt): wait for the user
            self.suspended = True
        return True

    def doctor_lines(self) -> list:
        if self.goal is None:
            return ["goal: none"]
        return [f"goal: {self.goal.status} · {self.goal.objective[:80]}"]


@command("/goal", args="[objective|pause|resume|blocked|complete|clear]", description="Manage the session goal")
def _goal(engine, args: str) -> None:
    host = engine.ext.host("GoalsHost")
    if host is None:
        engine.emit({"type": "error", "message": GOAL_USAGE})
        return
    res = goal_command(host.goal, args)
    host.goal = res.goal
    if res.changed:
        host._persist()
        if res.goal is not None and res.goal.status == "active":
            host.suspended = False
    for ev in res.events:
        engine.emit(ev)
    if res.changed:
        engine.sessions.emit_context_usage()
