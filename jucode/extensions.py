"""The hub between the engine core and its optional subsystems (MCP, project context, goals,
subagents, deferred actions, plans).

Each subsystem is a *host* object living in its own package and implementing any subset of
the hook methods below; the core calls the hub, the hub asks every host. Adding a subsystem
means adding one line to :data:`HOST_FACTORIES`, not editing the engine.
"""

from __future__ import annotations

import importlib
import logging

log = logging.getLogger("jucode.ext")

# (module, class) of every host, in the order their contributions are listed (this is also
# the order of their tools: subagents, MCP, goal/plan tools, propose_plan last, as upstream).
HOST_FACTORIES: list[tuple[str, str]] = [
    ("jucode.project.host", "ProjectHost"),
    ("jucode.subagents.host", "SubagentsHost"),
    ("jucode.mcp.host", "McpHost"),
    ("jucode.actions_host", "ActionsHost"),
    ("jucode.goals_host", "GoalsHost"),
    ("jucode.plan_host", "PlanHost"),
    ("jucode.session.host", "SessionCommandsHost"),
]


class Extensions:
    def __init__(self, engine):
        self.engine = engine
        self.hosts: list = []
        self.load_errors: list[str] = []
        from .commands import _load_builtins
        _load_builtins()        # the core's commands first, so /help leads command_list
        for mod_name, cls_name in HOST_FACTORIES:
            try:
                mod = importlib.import_module(mod_name)
                self.hosts.append(getattr(mod, cls_name)(engine))
            except ImportError as e:
                if e.name and mod_name.startswith(e.name):
                    continue                       # subsystem not built yet
                self._failed(mod_name, e)
            except Exception as e:  # a broken subsystem must not take the engine down
                self._failed(mod_name, e)

    def _failed(self, mod_name: str, exc: Exception) -> None:
        log.exception("loading %s failed", mod_name)
        self.load_errors.append(f"failed to load {mod_name.rsplit('.', 1)[-1]}: {exc}")

    def _each(self, method: str, *args):
        for h in self.hosts:
            fn = getattr(h, method, None)
            if fn is not None:
                yield h, fn(*args)

    def host(self, cls_name: str):
        for h in self.hosts:
            if type(h).__name__ == cls_name:
                return h
        return None

    # -- startup ----------------------------------------------------------------------------
    def command_list_event(self) -> dict:
        from .commands import command_list
        return {"type": "command_list", "commands": command_list(self.engine)}

    def extra_commands(self) -> list:
        out: list = []
        for _, cmds in self._each("commands"):
            out.extend(cmds or [])
        return out

    def mcp_servers_view(self) -> list:
        h = self.host("McpHost")
        return h.servers_view() if h is not None else []

    def startup_extra_events(self) -> list:
        out: list = [{"type": "error", "message": m} for m in self.load_errors]
        for _, evs in self._each("startup_events"):
            out.extend(evs or [])
        return out

    def after_startup(self) -> None:
        for _ in self._each("after_startup"):
            pass

    # -- turns ------------------------------------------------------------------------------
    def extra_tool_specs(self) -> list:
        out: list = []
        for _, specs in self._each("tool_specs"):
            out.extend(specs or [])
        return out

    def system_prompt(self, tool_names: list) -> str:
        h = self.host("ProjectHost")
        if h is not None:
            return h.system_prompt(tool_names)
        return ("You are JuCode, a coding agent working in the user's repository. "
                f"Current working directory: {self.engine.cwd}. Available tools: {', '.join(tool_names)}.")

    def turn_extra(self) -> dict:
        engine = self.engine
        extra: dict = {"call_main": engine.run_on_main}
        for _ in self._each("turn_extra", extra):
            pass
        return extra

    def hooks_runner(self):
        h = self.host("ProjectHost")
        return h.hooks_runner() if h is not None else None

    def user_prompt_blocked(self, msg):
        for _, reason in self._each("user_prompt_blocked", msg):
            if reason:
                return reason
        return None

    def turn_finished(self, turn, error) -> None:
        for _ in self._each("turn_finished", turn, error):
            pass

    def turn_interrupted(self, turn) -> None:
        for _ in self._each("turn_interrupted", turn):
            pass

    def run_stop_hooks(self) -> None:
        for _ in self._each("stop_hooks"):
            pass

    def defer_approval(self, approval) -> None:
        h = self.host("ActionsHost")
        if h is None:
            from .approvals import ApprovalAnswer
            approval.resolve(ApprovalAnswer("deny"))
            return
        h.defer_approval(approval)

    # -- events and the loop ------------------------------------------------------------------
    def observe(self, ev: dict) -> None:
        for _ in self._each("observe", ev):
            pass

    def internal(self, msg: dict) -> None:
        for _, handled in self._each("internal", msg):
            if handled:
                return

    def ops(self) -> dict:
        table: dict = {}
        for _, ops in self._each("ops"):
            table.update(ops or {})
        return table

    def idle_tick(self) -> None:
        for h in self.hosts:
            fn = getattr(h, "idle_tick", None)
            if fn is not None and fn():
                return

    def tick(self) -> None:
        for _ in self._each("tick"):
            pass

    def close(self) -> None:
        for h in self.hosts:
            fn = getattr(h, "close", None)
            if fn is not None:
                try:
                    fn()
                except Exception:
                    log.exception("closing %s failed", type(h).__name__)
