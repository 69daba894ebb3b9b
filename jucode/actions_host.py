"""Unattended sessions wired into the engine: ``set_attended``, deferred actions, ``decide_action``.

While nobody watches (``set_attended false``), the engine hands every call that would ask
for approval to :meth:`ActionsHost.defer_approval` instead of emitting ``approval_request``:
the call is stored in the profile's :class:`jucode.actions.ActionStore`, announced as
``action_deferred`` and answered at once with "submitted for confirmation", so the turn goes
on. A client decides later, possibly from a restarted engine (the store is on disk);
allowing runs the original call on the worker pool and reports back as a user message.

Everything here runs on the main thread except the allowed call itself, which hands its
outcome back through ``engine.call_soon``.
"""

from __future__ import annotations

import logging
import threading
from typing import Optional

from .actions import (ActionError, ActionStore, DeferredAction, approved_message, declined_message,
                      reused_result, submitted_result)
from .approvals import ApprovalAnswer
from .messages import QueuedMessage

log = logging.getLogger("jucode.actions")

ERR_SET_ATTENDED = "set_attended requires attended: true or false"
ERR_DECIDE = "decide_action requires action and decision: allow or deny"


class ActionsHost:
    """Per-engine view of the deferred-action store. Construction does no I/O."""

    def __init__(self, engine):
        self.engine = engine
        self.store = ActionStore(str(engine.profile))
        self._stop = threading.Event()      # interrupts allowed calls still running at shutdown

    # -- hooks ------------------------------------------------------------------------------
    def ops(self) -> dict:
        return {"set_attended": op_set_attended, "decide_action": op_decide_action}

    def startup_events(self) -> list:
        """Open actions recorded in this workspace (by this or an earlier engine), so a
        front-end that reconnects after a restart still sees what waits for a decision."""
        try:
            if not self.store.exists():
                return []
            acts = [a for a in self.store.list(open_only=True) if a.cwd == self.engine.cwd]
        except Exception:  # an unreadable store must not break startup
            log.exception("listing deferred actions failed")
            return []
        return [dict({"type": "action_deferred"}, **a.event_fields()) for a in acts]

    def doctor_lines(self) -> list:
        try:
            n = len(self.store.list(open_only=True)) if self.store.exists() else 0
        except Exception:
            return []
        return [f"deferred actions: {n} open ({self.store.path})"]

    def close(self) -> None:
        self._stop.set()

    # -- deferring --------------------------------------------------------------------------
    def defer_approval(self, approval) -> None:
        """Turn a parked approval into a deferred action and let the worker go on."""
        engine = self.engine
        try:
            act, reused = self.store.defer(engine.session_id, engine.cwd, approval.call_id,
                                           approval.name, approval.arguments, approval.summary,
                                           subagent_id=approval.subagent_id)
        except Exception as e:  # disk trouble: refuse the call rather than run it unasked
            log.exception("deferring %s failed", approval.name)
            approval.resolve(ApprovalAnswer("deny"))
            engine.emit({"type": "error", "message": f"failed to save deferred action: {e}"})
            return
        if not reused:
            engine.emit(dict({"type": "action_deferred"}, **act.event_fields()))
        result = submitted_result(act) if act.is_open else reused_result(act)
        approval.resolve(ApprovalAnswer("deferred", deferred_result=result))

    def set_attended(self, attended: bool) -> None:
        engine = self.engine
        engine.live.attended = attended
        if not attended:
            for call_id, approval in list(engine.approvals.items()):
                del engine.approvals[call_id]
                self.defer_approval(approval)
        engine.emit({"type": "attended", "attended": attended})

    # -- deciding -----------------------------------------------------------------------------
    def decide(self, action_id: str, decision: str) -> None:
        engine = self.engine
        try:
            act = self.store.get(action_id)
            if act is None:
                raise ActionError(f"no deferred action {action_id}")
            # An action of another session may be decided from the same workspace: that is
            # the engine restarted (or reconnected) for the same project.
            owner = None if act.cwd == engine.cwd else engine.session_id
            act = self.store.decide(action_id, decision, session_id=owner)
        except ActionError as e:
            engine.emit({"type": "error", "message": str(e)})
            return
        except OSError as e:
            engine.emit({"type": "error", "message": f"failed to save deferred action: {e}"})
            return
        if decision == "deny":
            engine.emit(dict({"type": "action_decided"}, **act.decided_fields()))
            engine.submit(QueuedMessage(content=declined_message(act), kind="deferred"))
            return
        spec = self._spec_for(act.name)
        engine.shell()                       # exec_command needs the session table (main thread)
        engine.pool.submit(self._run_allowed, act, spec, name="deferred-action")

    def _spec_for(self, name: str):
        """Main thread: the tool spec to run (builtins, then host tools such as MCP)."""
        from .tools.registry import lookup
        spec = lookup(name)
        if spec is not None:
            return spec
        for s in self.engine.ext.extra_tool_specs():
            if s.name == name:
                return s
        return None

    def _run_allowed(self, act: DeferredAction, spec) -> None:
        """Worker: run the original call, then report on the main thread."""
        import orjson
        from .tools.base import ToolContext, is_error_result
        engine = self.engine
        if spec is None:
            result = {"error": f"unknown tool: {act.name}"}
        else:
            from .tools.registry import run_tool
            # The engine's read state: an edit read earlier in this process passes
            # read-before-edit; after a restart the model must have read it again.
            ctx = ToolContext(cwd=act.cwd, interrupt=self._stop, read_state=engine.read_state,
                              profile_dir=str(engine.profile),
                              config=engine.config.data, shell_sessions=engine.shell_sessions,
                              agent_path="/root", call_id=act.call_id,
                              extra={"call_main": engine.run_on_main})
            try:
                result, _ = run_tool(spec, act.arguments, ctx)
            except Exception as e:  # run_tool should not raise; be sure anyway
                log.exception("deferred action %s failed", act.id)
                result = {"error": f"{act.name} failed: {e}"}
        raw = orjson.dumps(result).decode()
        is_error = is_error_result(result)
        output = raw
        try:
            from .tools.projection import project_model_output
            output = project_model_output(act.name, raw, act.cwd)
        except Exception:  # projection is best effort
            log.exception("projecting deferred action output failed")
        engine.call_soon(lambda: self._report(act, output, is_error))

    def _report(self, act: DeferredAction, output: str, is_error: bool) -> None:
        engine = self.engine
        try:
            stored = self.store.record_output(act.id, output, is_error)
        except OSError:
            log.exception("recording deferred action output failed")
            stored = None
        if stored is None:
            act.output, act.is_error = output, is_error
            stored = act
        engine.emit(dict({"type": "action_decided"}, **stored.decided_fields()))
        if not engine.exiting:
            engine.submit(QueuedMessage(content=approved_message(stored, output, is_error),
                                        kind="deferred"))


def op_set_attended(engine, op: dict) -> None:
    attended = op.get("attended")
    if not isinstance(attended, bool):
        engine.emit({"type": "error", "message": ERR_SET_ATTENDED})
        return
    engine.ext.host("ActionsHost").set_attended(attended)


def op_decide_action(engine, op: dict) -> None:
    action_id, decision = op.get("action"), op.get("decision")
    if not isinstance(action_id, str) or not action_id.strip() or decision not in ("allow", "deny"):
        engine.emit({"type": "error", "message": ERR_DECIDE})
        return
    engine.ext.host("ActionsHost").decide(action_id.strip(), decision)


def open_actions(host: ActionsHost, session_id: Optional[str] = None) -> list:
    """Open actions (optionally of one session), oldest first; for views and tests."""
    return host.store.list(session_id=session_id, open_only=True)
