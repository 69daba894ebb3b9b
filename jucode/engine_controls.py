"""Engine controls that answer ops and commands without touching the turn machinery:
approvals, approval modes, `continue`, and the model/provider settings of the session.

A mixin of :class:`jucode.engine.Engine`, split out so the engine module keeps to one idea
(state and the turn lifecycle). Main thread only, like the engine.
"""

from __future__ import annotations

import os

from .approvals import ApprovalAnswer, ModeError, parse_mode


class EngineControls:
    # -- approvals and modes ---------------------------------------------------------------------
    def approve(self, op: dict) -> None:
        from .approvals import check_answer, validate_approve_op
        try:
            call_id, decision, always, hunks = validate_approve_op(op)
        except ValueError as e:
            self.emit({"type": "error", "message": str(e)})
            return
        approval = self.approvals.get(call_id)
        if approval is None:
            self.emit({"type": "error", "message": "no pending approval for that call"})
            return
        try:
            check_answer(approval, decision, always, hunks)
        except ValueError as e:
            self.emit({"type": "error", "message": str(e)})
            return
        del self.approvals[call_id]
        if decision == "allow" and always:
            self.live.allowlist.add(approval.name)
        approval.resolve(ApprovalAnswer(decision, always=always, hunks=hunks))

    def set_mode(self, value) -> None:
        try:
            mode = parse_mode(value)
        except ModeError as e:
            self.emit({"type": "error", "message": str(e)})
            return
        self.live.mode = mode
        self.emit({"type": "status", "message": f"approval mode: {mode}"})
        self.emit({"type": "approval_mode", "mode": mode})
        self._release_ungated()

    def _release_ungated(self) -> None:
        """Parked requests the new mode no longer gates run at once."""
        from .approvals import needs_approval
        for call_id, a in list(self.approvals.items()):
            if self.live.mode != "plan" and not needs_approval(a.gate, self.live.mode, a.read_only_hint):
                del self.approvals[call_id]
                a.resolve(ApprovalAnswer("allow"))

    def continue_turn(self) -> None:
        if self.turn is not None:
            self.emit({"type": "error", "message": "a turn is already running"})
            return
        if not any(i.get("role") == "user" for i in self.sessions.request_items()):
            self.emit({"type": "error", "message": "nothing to continue"})
            return
        self.start_turn(None)

    # -- model and provider ----------------------------------------------------------------------
    def on_model_changed(self) -> None:
        self._key_missing = None
        if self.sessions._counter is not None:
            self.sessions._counter.set_model(self.model)

    def replay_script(self):
        """The replay script when the engine runs on the replay provider (--replay, --demo, config)."""
        if self.opts.replay:
            return self.opts.replay
        if self.opts.demo:
            from .demo import demo_script_path
            return demo_script_path()
        if (self.config.get("provider") or "") == "replay":
            return self.config.get("replay_script") or self.config.get("script")
        return None

    def key_missing(self) -> bool:
        if self._key_missing is None:
            if self.replay_script() is not None:
                self._key_missing = False
            else:
                try:
                    from .turn_setup import credentials
                    key, _ = credentials(self)
                except Exception:
                    key = os.environ.get(self.config.get("api_key_env") or "OPENAI_API_KEY")
                self._key_missing = not key
        return self._key_missing

    def shell(self):
        if self.shell_sessions is None:
            try:
                from .tools.shell import ShellSessions
                self.shell_sessions = ShellSessions()
            except ImportError:
                return None
        return self.shell_sessions
