"""Approval modes, the one gating table, and the handle a worker waits on.

The table answers "does this call need the user's say-so in this mode?". Plan-mode refusals
are decided before it (jucode/planmode.py); the table only says run or ask.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Optional

from .tools.base import GATE_EDIT, GATE_IMAGE, GATE_MCP, GATE_READ, GATE_SHELL, GATE_WEB

MODES = ("manual", "plan", "auto-edit", "auto", "full-access")
# Older front-ends send these names (front-end notes §9).
MODE_ALIASES = {"read-only": "manual", "full-auto": "full-access", "suggest": "manual"}

RUN, ASK = "run", "ask"

# gate class -> mode -> decision. "plan" rows only apply to calls plan mode let through.
GATING_TABLE: dict[str, dict[str, str]] = {
    GATE_READ:  {"manual": RUN, "plan": RUN, "auto-edit": RUN, "auto": RUN, "full-access": RUN},
    GATE_EDIT:  {"manual": ASK, "plan": ASK, "auto-edit": RUN, "auto": RUN, "full-access": RUN},
    GATE_IMAGE: {"manual": RUN, "plan": ASK, "auto-edit": RUN, "auto": RUN, "full-access": RUN},
    GATE_WEB:   {"manual": ASK, "plan": ASK, "auto-edit": RUN, "auto": RUN, "full-access": RUN},
    GATE_SHELL: {"manual": ASK, "plan": ASK, "auto-edit": ASK, "auto": ASK, "full-access": RUN},
    GATE_MCP:   {"manual": ASK, "plan": ASK, "auto-edit": ASK, "auto": ASK, "full-access": RUN},
}


class ModeError(ValueError):
    pass


def parse_mode(value) -> str:
    """Validate a mode name (aliases accepted) with upstream's error text."""
    if not isinstance(value, str):
        raise ModeError("unknown approval mode: use manual, auto-edit, auto, full-access, or plan")
    v = value.strip().lower()
    v = MODE_ALIASES.get(v, v)
    if v not in MODES:
        raise ModeError(f"unknown approval mode '{value}': use manual, auto-edit, auto, full-access, or plan")
    return v


def needs_approval(gate: str, mode: str, read_only_hint: bool = False) -> bool:
    """The single place that decides run vs ask (read-only MCP tools relax the MCP row)."""
    if gate == GATE_MCP and read_only_hint and mode in ("auto-edit", "auto"):
        return False
    row = GATING_TABLE.get(gate, GATING_TABLE[GATE_SHELL])
    return row.get(mode, ASK) == ASK


@dataclass
class LiveSettings:
    """Settings workers read while a turn runs; only the main thread writes them."""

    mode: str = "manual"
    attended: bool = True
    allowlist: set = field(default_factory=set)


@dataclass
class ApprovalAnswer:
    decision: str                      # "allow" | "deny" | "deferred"
    always: bool = False
    hunks: Optional[list] = None
    deferred_result: Optional[dict] = None


class Approval:
    """One parked call. The worker waits on it; the main thread answers it exactly once."""

    def __init__(self, call_id: str, name: str, summary: str, arguments: str, gate: str,
                 subagent_id: Optional[str] = None, hunks: Optional[list] = None,
                 read_only_hint: bool = False, turn_id: int = 0):
        self.call_id = call_id
        self.name = name
        self.summary = summary
        self.arguments = arguments
        self.gate = gate
        self.subagent_id = subagent_id
        self.hunks = hunks
        self.read_only_hint = read_only_hint
        self.turn_id = turn_id
        self._done = threading.Event()
        self.answer: Optional[ApprovalAnswer] = None

    def resolve(self, answer: ApprovalAnswer) -> bool:
        if self._done.is_set():
            return False
        self.answer = answer
        self._done.set()
        return True

    def wait(self, interrupt: threading.Event, poll: float = 0.05) -> ApprovalAnswer:
        while not self._done.wait(poll):
            if interrupt.is_set():
                return ApprovalAnswer("deny")
        return self.answer or ApprovalAnswer("deny")

    @property
    def answered(self) -> bool:
        return self._done.is_set()

    def request_event(self) -> dict:
        return {"type": "approval_request", "call_id": self.call_id, "name": self.name,
                "summary": self.summary, "subagent_id": self.subagent_id, "hunks": self.hunks}


DENIED_RESULT = {"error": "denied by user: the user declined to run this tool call. Do not retry it; "
                          "ask how to proceed or try a different approach."}


def validate_approve_op(op: dict) -> tuple[str, str, bool, Optional[list]]:
    """Field checks of the approve op, with upstream's texts (raises ValueError)."""
    call_id = op.get("call_id")
    if not isinstance(call_id, str) or not call_id.strip():
        raise ValueError("approve requires call_id")
    decision = op.get("decision")
    if decision not in ("allow", "deny"):
        raise ValueError("approve requires decision: allow or deny")
    always = op.get("always", False)
    if always is None:
        always = False
    if not isinstance(always, bool):
        raise ValueError("approve requires always: true or false")
    hunks = op.get("hunks")
    if hunks is not None:
        if not isinstance(hunks, list) or not all(isinstance(h, str) and h.strip() for h in hunks):
            raise ValueError("hunks must be an array of hunk id strings")
    return call_id.strip(), decision, always, hunks


def check_answer(approval: Approval, decision: str, always: bool, hunks: Optional[list]) -> None:
    """Core checks once the pending call is known (raises ValueError with upstream's texts)."""
    if hunks is None:
        return
    if always:
        raise ValueError("--hunks cannot be combined with always; approve the whole call to allowlist the tool")
    if decision != "allow":
        raise ValueError("--hunks requires allow; use plain deny to reject the whole call")
    if not approval.hunks:
        raise ValueError(f"call {approval.call_id} does not support hunk selection; use plain allow or deny")
    if not hunks:
        raise ValueError("--hunks requires at least one hunk id")
    valid = [h["id"] for h in approval.hunks]
    for h in hunks:
        if h not in valid:
            raise ValueError(f"unknown hunk id '{h}'; valid ids: {', '.join(valid)}")
