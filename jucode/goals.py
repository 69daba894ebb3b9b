"""Session goals and the plan checklist: state, ``/goal`` logic, tool handlers, accounting.

A goal is a standing objective the engine keeps pursuing between user messages: while it is
``active`` and the session is idle, the engine starts a continuation turn (see
:func:`continuation_text`). Token use is charged to the goal after each turn so an optional
budget can stop runaway work (``budget_limited``).

Everything here is plain data + pure functions, run on the main thread; the goal tools reach it
through the core's channel, so there is no locking.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Optional

from .events import event

GOAL_STATUSES = ("active", "paused", "blocked", "usage_limited", "budget_limited", "complete")
ACCOUNTING_STATUSES = ("active", "budget_limited")
OBJECTIVE_MAX_CHARS = 4000
PLAN_STATUSES = ("pending", "in_progress", "completed")

ERR_GOAL_EXISTS = "cannot create a new goal because this session already has a goal"
ERR_UPDATE_STATUS = "update_goal can only set status to complete or blocked"
ERR_UPDATE_REQUIRES = "update_goal requires status"
ERR_NO_GOAL = "this session has no goal"
ERR_OBJECTIVE_EMPTY = "create_goal requires an objective"
ERR_OBJECTIVE_LONG = f"objective must be at most {OBJECTIVE_MAX_CHARS} characters"
ERR_BUDGET = "token_budget must be a positive integer"
ERR_PLAN_REQUIRED = "update_plan requires a plan array"
GOAL_USAGE = "usage: /goal [objective|pause|resume|blocked|complete|clear]"


def _now() -> int:
    return int(time.time())


@dataclass
class Goal:
    objective: str
    status: str = "active"
    token_budget: Optional[int] = None
    tokens_used: int = 0
    time_used_seconds: float = 0.0
    created_at: int = field(default_factory=_now)     # unix seconds
    updated_at: int = field(default_factory=_now)

    def touch(self, now: Optional[int] = None) -> None:
        self.updated_at = _now() if now is None else now

    def remaining_tokens(self) -> Optional[int]:
        if self.token_budget is None:
            return None
        return max(0, self.token_budget - self.tokens_used)

    def to_dict(self) -> dict:
        """Snake-case form used by the ``goal`` event and the session file."""
        return {"objective": self.objective, "status": self.status, "token_budget": self.token_budget,
                "tokens_used": self.tokens_used, "time_used_seconds": int(self.time_used_seconds),
                "created_at": self.created_at, "updated_at": self.updated_at}

    def to_tool_json(self) -> dict:
        """camelCase form the goal tools return to the model."""
        return {"objective": self.objective, "status": self.status, "tokenBudget": self.token_budget,
                "tokensUsed": self.tokens_used, "remainingTokens": self.remaining_tokens(),
                "timeUsedSeconds": int(self.time_used_seconds), "createdAt": self.created_at,
                "updatedAt": self.updated_at}

    @classmethod
    def from_dict(cls, data: Any) -> Optional["Goal"]:
        """Rebuild from a saved session (either key style); None for anything unusable."""
        if not isinstance(data, dict):
            return None
        def pick(snake: str, camel: str, default: Any = None) -> Any:
            return data.get(snake, data.get(camel, default))
        objective = pick("objective", "objective")
        if not isinstance(objective, str) or not objective:
            return None
        status = pick("status", "status", "active")
        budget = pick("token_budget", "tokenBudget")
        return cls(objective=objective,
                   status=status if status in GOAL_STATUSES else "active",
                   token_budget=budget if isinstance(budget, int) and budget > 0 else None,
                   tokens_used=int(pick("tokens_used", "tokensUsed", 0) or 0),
                   time_used_seconds=float(pick("time_used_seconds", "timeUsedSeconds", 0) or 0),
                   created_at=int(pick("created_at", "createdAt", 0) or _now()),
                   updated_at=int(pick("updated_at", "updatedAt", 0) or _now()))


def goal_event(goal: Optional[Goal]) -> dict:
    """The ``goal`` event; ``goal: null`` tells the client the goal was cleared."""
    return event("goal", goal=goal.to_dict() if goal is not None else None)


# --------------------------------------------------------------------------- accounting

@dataclass
class GoalTurnCounter:
    """Tokens a turn spent, reset when a turn starts and charged to the goal when it ends."""

    tokens: int = 0
    started_at: float = field(default_factory=time.monotonic)

    def reset(self) -> None:
        self.tokens = 0
        self.started_at = time.monotonic()

    def add_usage(self, input_tokens: int, cached_input_tokens: int, output_tokens: int) -> None:
        """One model response's usage: uncached input plus output count against the goal."""
        self.tokens += max(0, (input_tokens or 0) - (cached_input_tokens or 0)) + max(0, output_tokens or 0)

    def elapsed(self) -> float:
        return max(0.0, time.monotonic() - self.started_at)


def account_turn(goal: Optional[Goal], tokens: int, elapsed_seconds: float,
                 now: Optional[int] = None) -> bool:
    """Charge a finished turn to the goal; returns True when the goal changed.

    Only ``active`` and ``budget_limited`` goals are charged. An active goal whose usage
    reached its budget becomes ``budget_limited`` (and so stops continuing on its own).
    """
    if goal is None or goal.status not in ACCOUNTING_STATUSES:
        return False
    goal.tokens_used += max(0, int(tokens))
    goal.time_used_seconds += max(0.0, float(elapsed_seconds))
    if goal.status == "active" and goal.token_budget is not None and goal.tokens_used >= goal.token_budget:
        goal.status = "budget_limited"
    goal.touch(now)
    return True


def wants_continuation(goal: Optional[Goal]) -> bool:
    """Whether an idle session should run a goal-continuation turn."""
    return goal is not None and goal.status == "active"


def continuation_info(goal: Goal) -> str:
    return f"Continuing goal: {goal.objective}"


def continuation_text(goal: Goal) -> str:
    """Body of the ``GoalContext`` entry that drives a continuation turn (no user message)."""
    lines = ["<goal_context>", "The session goal is still active:", goal.objective]
    if goal.token_budget is not None:
        lines.append(f"Token budget: {goal.tokens_used} of {goal.token_budget} used "
                     f"({goal.remaining_tokens()} left).")
    lines += [
        "",
        "Look at what has been done so far and decide:",
        "- If the goal is fully achieved, verify it, then call update_goal with status \"complete\".",
        "- If you cannot make progress without the user (missing access, a decision only they can "
        "make), call update_goal with status \"blocked\" and explain what you need.",
        "- If the goal is ambiguous, ask the user a clarifying question and stop.",
        "- Otherwise continue working toward it with the next concrete step.",
        "</goal_context>",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------- /goal

@dataclass
class GoalCommandResult:
    """Outcome of ``/goal``: the new goal (may be the same object), events to emit, and whether
    the session changed (save it and emit ``context_usage``)."""

    goal: Optional[Goal]
    events: list = field(default_factory=list)
    changed: bool = False


def goal_command(goal: Optional[Goal], args: str, now: Optional[int] = None) -> GoalCommandResult:
    """``/goal`` with no args shows the goal; a keyword changes status; other text sets it."""
    text = args.strip()
    word = text.lower()
    if not text:
        if goal is None:
            return GoalCommandResult(None, [event("info", message="no goal set; use /goal <objective>"),
                                            goal_event(None)])
        return GoalCommandResult(goal, [event("info", message=describe_goal(goal)), goal_event(goal)])
    if word == "clear":
        if goal is None:
            return GoalCommandResult(None, [event("info", message="no goal set"), goal_event(None)])
        return GoalCommandResult(None, [event("info", message="goal cleared"), goal_event(None)], True)
    transitions = {"pause": "paused", "resume": "active", "blocked": "blocked", "complete": "complete"}
    if word in transitions:
        if goal is None:
            return GoalCommandResult(None, [event("error", message="no goal set; use /goal <objective>")])
        new_status = transitions[word]
        goal.status = new_status
        goal.touch(now)
        label = {"paused": "goal paused", "active": "goal resumed", "blocked": "goal marked blocked",
                 "complete": "goal marked complete"}[new_status]
        return GoalCommandResult(goal, [event("info", message=label), goal_event(goal)], True)
    if len(text) > OBJECTIVE_MAX_CHARS:
        return GoalCommandResult(goal, [event("error", message=ERR_OBJECTIVE_LONG)])
    stamp = _now() if now is None else now
    new_goal = Goal(objective=text, created_at=stamp, updated_at=stamp)
    return GoalCommandResult(new_goal, [event("info", message=f"goal set: {text}"), goal_event(new_goal)], True)


def describe_goal(goal: Goal) -> str:
    budget = f"/{goal.token_budget}" if goal.token_budget is not None else ""
    return (f"goal ({goal.status}): {goal.objective} — tokens {goal.tokens_used}{budget}, "
            f"time {int(goal.time_used_seconds)}s")


# --------------------------------------------------------------------------- goal tools

@dataclass
class GoalToolResult:
    """A goal tool's output for the model plus the goal after the call.

    ``changed``: emit a ``goal`` event and save the session (upstream does both for every goal
    tool call, so engines may ignore this flag and always do it).
    """

    output: dict
    goal: Optional[Goal]
    changed: bool = False


def get_goal_tool(goal: Optional[Goal]) -> GoalToolResult:
    return GoalToolResult({"goal": goal.to_tool_json() if goal is not None else None}, goal)


def create_goal_tool(goal: Optional[Goal], args: dict, now: Optional[int] = None) -> GoalToolResult:
    if goal is not None:
        return GoalToolResult({"error": ERR_GOAL_EXISTS}, goal)
    objective = args.get("objective") if isinstance(args, dict) else None
    if not isinstance(objective, str) or not objective.strip():
        return GoalToolResult({"error": ERR_OBJECTIVE_EMPTY}, goal)
    objective = objective.strip()
    if len(objective) > OBJECTIVE_MAX_CHARS:
        return GoalToolResult({"error": ERR_OBJECTIVE_LONG}, goal)
    budget = args.get("token_budget")
    if budget is not None:
        if isinstance(budget, float) and budget.is_integer():
            budget = int(budget)
        if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
            return GoalToolResult({"error": ERR_BUDGET}, goal)
    stamp = _now() if now is None else now
    new_goal = Goal(objective=objective, token_budget=budget, created_at=stamp, updated_at=stamp)
    return GoalToolResult({"goal": new_goal.to_tool_json()}, new_goal, True)


def update_goal_tool(goal: Optional[Goal], args: dict, now: Optional[int] = None) -> GoalToolResult:
    status = args.get("status") if isinstance(args, dict) else None
    if status is None or status == "":
        return GoalToolResult({"error": ERR_UPDATE_REQUIRES}, goal)
    if status not in ("complete", "blocked"):
        return GoalToolResult({"error": ERR_UPDATE_STATUS}, goal)
    if goal is None:
        return GoalToolResult({"error": ERR_NO_GOAL}, goal)
    goal.status = status
    goal.touch(now)
    return GoalToolResult({"goal": goal.to_tool_json()}, goal, True)


def run_goal_tool(name: str, goal: Optional[Goal], args: dict) -> GoalToolResult:
    """Dispatch by tool name (``get_goal``/``create_goal``/``update_goal``)."""
    if name == "get_goal":
        return get_goal_tool(goal)
    if name == "create_goal":
        return create_goal_tool(goal, args)
    if name == "update_goal":
        return update_goal_tool(goal, args)
    return GoalToolResult({"error": f"unknown tool: {name}"}, goal)


# --------------------------------------------------------------------------- update_plan

@dataclass
class PlanStep:
    step: str
    status: str = "pending"


def parse_plan(args: dict) -> tuple[Optional[list[PlanStep]], Optional[str]]:
    """Validate ``update_plan`` arguments: ``(steps, None)`` or ``(None, error)``.

    Blank steps are dropped; an unknown status becomes ``pending`` (models improvise names like
    "todo", and refusing the whole plan for that helps nobody).
    """
    plan = args.get("plan") if isinstance(args, dict) else None
    if not isinstance(plan, list):
        return None, ERR_PLAN_REQUIRED
    steps: list[PlanStep] = []
    for item in plan:
        if isinstance(item, str):
            text, status = item, "pending"
        elif isinstance(item, dict):
            text, status = item.get("step"), item.get("status")
        else:
            continue
        if not isinstance(text, str) or not text.strip():
            continue
        steps.append(PlanStep(text.strip(), status if status in PLAN_STATUSES else "pending"))
    return steps, None


def update_plan_tool(args: dict) -> tuple[dict, Optional[list[PlanStep]], Optional[dict]]:
    """``(tool output, steps or None, plan event or None)``; keep the steps in memory only."""
    steps, err = parse_plan(args)
    if err is not None:
        return {"error": err}, None, None
    return {"ok": True, "steps": len(steps)}, steps, plan_event(steps)


def plan_event(steps: list[PlanStep]) -> dict:
    return event("plan", plan=[{"step": s.step, "status": s.status} for s in steps])


# JSON schemas for the tool table (the wire definitions live with the other tools).
GOAL_TOOL_PARAMETERS = {
    "get_goal": {"type": "object", "properties": {}, "additionalProperties": False},
    "create_goal": {"type": "object", "properties": {
        "objective": {"type": "string", "description": "What the session should achieve (at most 4000 characters)."},
        "token_budget": {"type": "integer", "description": "Optional cap on tokens spent pursuing the goal."}},
        "required": ["objective"]},
    "update_goal": {"type": "object", "properties": {
        "status": {"type": "string", "enum": ["complete", "blocked"]}}, "required": ["status"]},
    "update_plan": {"type": "object", "properties": {
        "plan": {"type": "array", "items": {"type": "object", "properties": {
            "step": {"type": "string"},
            "status": {"type": "string", "enum": list(PLAN_STATUSES)}}, "required": ["step", "status"]}}},
        "required": ["plan"]},
}
