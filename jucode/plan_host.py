"""Plan mode wired into the engine: the ``propose_plan`` tool, ``approve_plan`` and ``/plan``.

The pure rules (what plan mode refuses, parsing streamed plan drafts, plan status
transitions) live in :mod:`jucode.planmode`; this host owns the session's :class:`PlanBook`
and does everything that touches engine state, always on the main thread: the tool's run
hops there through ``extra["call_main"]`` so the book, the journal and the event stream
change in one place and in order.

Draft ids: the worker emits ``plan_draft`` events while the ``propose_plan`` arguments
stream, with an id it gets from ``extra["new_plan_id"]``, and tells us which call that id
belongs to (``_plan_draft_id``). The final ``proposed_plan`` reuses that id, so a front-end
can replace the draft it has been growing with the finished plan.
"""

from __future__ import annotations

import logging
from typing import Optional

from .approvals import ModeError, parse_mode
from .commands import command
from .messages import QueuedMessage
from .planmode import PlanBook, PlanError, ProposedPlan, new_plan_id, propose_plan_result
from .tools.base import GATE_READ, ToolContext, ToolSpec

log = logging.getLogger("jucode.plan")

ERR_ONLY_IN_PLAN_MODE = "propose_plan is only available in plan mode"
ERR_PLAN_FIELDS = "propose_plan requires a title and the plan"
PLAN_USAGE = "usage: /plan <id> approve [mode] [notes] | /plan <id> revise <feedback>"

PROPOSE_PLAN_DESCRIPTION = (
    "Hand in your implementation plan for the user's approval (plan mode only). Give a short "
    "title and the plan as Markdown: goal and principles, a File | Change | Why table, the "
    "steps, risks and how the result will be verified. Nothing is changed until the user "
    "approves; stop after calling this tool."
)
PROPOSE_PLAN_PARAMETERS = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "description": "Short title of the plan."},
        "plan": {"type": "string", "description": "The complete plan as Markdown."},
    },
    "required": ["title", "plan"],
}


class PlanHost:
    """Per-engine plan state. Constructed during ``Engine.__init__``: cheap, no I/O."""

    def __init__(self, engine):
        self.engine = engine
        self.book = PlanBook()
        self._draft_ids: dict = {}          # propose_plan call_id -> id its drafts used
        self._spec = ToolSpec(name="propose_plan", description=PROPOSE_PLAN_DESCRIPTION,
                              parameters=PROPOSE_PLAN_PARAMETERS, run=self._run_propose_plan,
                              gate=GATE_READ)

    # -- hooks ------------------------------------------------------------------------------
    def tool_specs(self) -> list:
        """propose_plan is offered only while the session is in plan mode."""
        return [self._spec] if self.engine.live.mode == "plan" else []

    def turn_extra(self, extra: dict) -> None:
        extra["new_plan_id"] = new_plan_id
        extra.setdefault("missing_tool_errors", []).append(_missing_tool_error)

    def internal(self, msg: dict) -> bool:
        if msg.get("type") == "_plan_draft_id":
            call_id, plan_id = msg.get("call_id"), msg.get("id")
            if isinstance(call_id, str) and isinstance(plan_id, str):
                self._draft_ids[call_id] = plan_id
            return True
        return False

    def turn_finished(self, turn, error) -> None:
        self._draft_ids.clear()              # drafts of calls that never completed

    def turn_interrupted(self, turn) -> None:
        self._draft_ids.clear()

    def ops(self) -> dict:
        return {"approve_plan": op_approve_plan}

    # -- propose_plan -------------------------------------------------------------------------
    def _run_propose_plan(self, args: dict, ctx: ToolContext) -> dict:
        """Worker side: validate, then let the main thread record and announce the plan."""
        title = args.get("title") if isinstance(args, dict) else None
        markdown = args.get("plan") if isinstance(args, dict) else None
        if not isinstance(title, str) or not title.strip() or not isinstance(markdown, str) \
                or not markdown.strip():
            return {"error": ERR_PLAN_FIELDS}
        call_main = ctx.extra.get("call_main")
        if call_main is None:                # no engine (unit use): nothing to record into
            return {"error": ERR_ONLY_IN_PLAN_MODE}
        result = call_main(lambda: self.propose(ctx.call_id, title.strip(), markdown),
                           ctx.interrupt)
        if result is None:                   # interrupted while waiting for the main thread
            return {"error": "propose_plan was interrupted"}
        return result

    def propose(self, call_id: str, title: str, markdown: str) -> dict:
        """Main thread: add the plan to the book, journal it, emit ``proposed_plan``."""
        if self.engine.live.mode != "plan":
            return {"error": ERR_ONLY_IN_PLAN_MODE}
        plan_id = self._draft_ids.pop(call_id, "") if call_id else ""
        if plan_id in self.book.plans:       # never overwrite an earlier plan
            plan_id = ""
        plan = self.book.add(title, markdown, plan_id=plan_id)
        self._publish(plan)
        return propose_plan_result(plan.id)

    def _publish(self, plan: ProposedPlan) -> None:
        """Journal the plan with its current status (the transcript keeps the latest one)
        and emit it."""
        fields = plan.event_fields()
        self.engine.sessions.append(dict({"type": "proposed_plan"}, **fields))
        self.engine.emit(dict({"type": "proposed_plan"}, **fields))

    # -- approve / revise ---------------------------------------------------------------------
    def find(self, plan_id: str) -> Optional[ProposedPlan]:
        """A plan by id; after /resume the book is empty, so fall back to the journal."""
        plan = self.book.get(plan_id)
        if plan is not None:
            return plan
        store = getattr(self.engine.sessions, "store", None)
        if store is None:
            return None
        latest = None
        try:
            for entry in store.active_path():
                kind = entry.kind
                if kind.get("type") == "proposed_plan" and kind.get("id") == plan_id:
                    latest = kind
        except Exception:  # a damaged journal only means "unknown plan"
            log.exception("reading plans from the journal failed")
            return None
        if latest is None:
            return None
        plan = ProposedPlan(id=plan_id, title=str(latest.get("title", "")),
                            markdown=str(latest.get("markdown", "")),
                            status=str(latest.get("status") or "pending"))
        self.book.plans[plan_id] = plan
        return plan

    def decide(self, plan_id, decision, mode=None, feedback=None) -> None:
        """Apply an approve/revise request; every failure is one ``error`` event."""
        engine = self.engine
        if not isinstance(plan_id, str) or not plan_id.strip():
            engine.emit({"type": "error", "message": "approve_plan requires id"})
            return
        if decision not in ("approve", "revise"):
            engine.emit({"type": "error", "message": "approve_plan requires decision: approve or revise"})
            return
        if mode is not None:
            try:
                mode = parse_mode(mode)
            except ModeError as e:
                engine.emit({"type": "error", "message": str(e)})
                return
        self.find(plan_id.strip())
        try:
            d = self.book.decide(plan_id, decision, mode=mode, feedback=feedback)
        except PlanError as e:
            engine.emit({"type": "error", "message": str(e)})
            return
        self._publish(d.plan)
        if engine.live.mode != d.mode:
            engine.set_mode(d.mode)
        engine.submit(QueuedMessage(content=d.message, kind="plan"))


def op_approve_plan(engine, op: dict) -> None:
    host = engine.ext.host("PlanHost")
    feedback = op.get("feedback")
    if feedback is None:
        feedback = op.get("notes")
    host.decide(op.get("id"), op.get("decision"), op.get("mode"),
                feedback if isinstance(feedback, str) else None)


@command("/plan", args="<id> approve [mode] [notes] | <id> revise <feedback>",
         description="Approve or revise a proposed plan", advanced=True)
def _plan_command(engine, args: str) -> None:
    parts = args.split(None, 2)
    if len(parts) < 2 or parts[1] not in ("approve", "revise"):
        engine.emit({"type": "error", "message": PLAN_USAGE})
        return
    plan_id, decision = parts[0], parts[1]
    rest = parts[2].strip() if len(parts) > 2 else ""
    mode = None
    if decision == "approve" and rest:
        first, _, tail = rest.partition(" ")
        try:
            mode = parse_mode(first)
            rest = tail.strip()
        except ModeError:
            mode = None                      # no mode given: everything is notes
    engine.ext.host("PlanHost").decide(plan_id, decision, mode, rest)


def _missing_tool_error(name: str):
    """propose_plan is only offered in plan mode; outside it the model gets upstream's text."""
    return {"error": "propose_plan is only available in plan mode"} if name == "propose_plan" else None
