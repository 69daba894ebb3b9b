"""ProjectHost: plugs project context (prompt, skills, custom commands, hooks, trust, watcher,
chat mode, web_search) into the running engine through the extension hooks.

State lives on the main thread: the loaded :class:`ProjectContext` is replaced wholesale on a
reload, so worker threads that hold a reference (the hooks runner) always see one consistent
snapshot. The watcher only enqueues reloads (``engine.call_soon``); it never touches state.
"""

from __future__ import annotations

import logging
from typing import Optional

from ..commands import Command
from ..messages import QueuedMessage
from . import slash  # noqa: F401  (registers /pin, /skills, /trust)
from .context import ProjectContext, load_project_context
from .prompt import is_chat_cwd

log = logging.getLogger("jucode.project")

SESSION_START_TIMEOUT = 10.0


class HooksRunner:
    """What the worker-side tool gate calls; reads the host's current hooks on every call."""

    def __init__(self, host: "ProjectHost"):
        self.host = host

    def pre_tool_use(self, name: str, args: dict) -> Optional[str]:
        hooks = self.host.ctx.hooks
        if not hooks.has("pre_tool_use"):
            return None
        res = hooks.run("pre_tool_use", {"tool": name, "arguments": args}, self.host.engine.cwd, tool=name)
        self.host.post_errors(res.errors)
        return (res.reason or "blocked") if res.blocked else None

    def post_tool_use(self, name: str, output: str) -> None:
        hooks = self.host.ctx.hooks
        if not hooks.has("post_tool_use"):
            return
        res = hooks.run("post_tool_use", {"tool": name, "output": output}, self.host.engine.cwd, tool=name)
        self.host.post_errors(res.errors)


class ProjectHost:
    def __init__(self, engine):
        self.engine = engine
        self.profile = str(engine.profile)
        self.chat = bool(getattr(engine.opts, "chat", False)) or is_chat_cwd(self.profile, engine.cwd)
        self.ctx: ProjectContext = self._load()
        self.runner = HooksRunner(self)
        self.watcher = None
        self._closed = False

    # -- loading ------------------------------------------------------------------------------
    def _load(self) -> ProjectContext:
        # Instructions are read per turn (system_prompt), so the context skips them.
        return load_project_context(self.profile, self.engine.cwd, chat=self.chat, include_instructions=False)

    def reload(self) -> None:
        """Re-read skills, commands, hooks and trust; re-emit command_list if it changed."""
        old_errors = set(self.ctx.hooks.errors)
        self.ctx = self._load()
        for err in self.ctx.hooks.errors:
            if err not in old_errors:
                self.engine.emit({"type": "error", "message": err})
        self.engine.refresh_commands()

    def post_errors(self, errors: list) -> None:
        """Thread-safe: hook failures (timeouts) become error events on the main loop."""
        for e in errors or []:
            self.engine.post({"type": "error", "message": e})

    # -- startup ------------------------------------------------------------------------------
    def startup_events(self) -> list:
        out: list = []
        if self.ctx.trust_prompt:
            out.append(dict({"type": "trust_prompt"}, **self.ctx.trust_prompt))
        for err in self.ctx.hooks.errors:
            out.append({"type": "error", "message": err})
        if self.ctx.hooks.has("session_start"):
            res = self.ctx.hooks.run("session_start", {}, self.engine.cwd, timeout=SESSION_START_TIMEOUT)
            out += [{"type": "info", "message": m} for m in res.infos]
            out += [{"type": "error", "message": m} for m in res.errors]
        return out

    def after_startup(self) -> None:
        """Start watching only now: the startup batch is already written."""
        if self._closed or self.engine.config.get("watch_files", True) is False:
            return
        from .watcher import ProjectWatcher
        engine = self.engine

        def on_change(kind: str) -> None:          # watcher thread
            engine.call_soon(lambda: self._on_change(kind))
        self.watcher = ProjectWatcher(self.profile, engine.cwd, on_change, project=not self.chat,
                                      on_ready=lambda: engine.call_soon(self._on_ready))
        self.watcher.start()

    def _on_ready(self) -> None:
        """Catch up on edits made between startup and the watches being in place."""
        if not self._closed:
            self._on_change("config")
            self.reload()

    def _on_change(self, kind: str) -> None:
        if self._closed:
            return
        if kind == "config":
            from ..config import reload_into
            err = reload_into(self.engine.config)
            if err:
                self.engine.emit({"type": "error", "message": err})
            else:
                self.engine.on_model_changed()       # credentials may have changed
            return
        if kind in ("prompt", "instructions"):
            return                                   # read afresh at every turn
        self.reload()

    def close(self) -> None:
        self._closed = True
        w, self.watcher = self.watcher, None
        if w is not None:
            w.stop()

    # -- commands -----------------------------------------------------------------------------
    def commands(self) -> list:
        out: list = []
        for s in self.ctx.skills:
            if s.enabled and s.slug:
                out.append(Command("/" + s.slug, "", s.description, _skill_handler(s), "SKILL", source="skill"))
        for c in self.ctx.commands:
            out.append(Command("/" + c.name, "[args]", c.description, _custom_handler(c), c.marker,
                               source="custom"))
        return out

    # -- turns --------------------------------------------------------------------------------
    def system_prompt(self, tool_names: list) -> str:
        from ..engine import TurnSetupError
        from .instructions import discover_instructions
        from .prompt import build_system_prompt, load_base_prompt
        try:
            base = load_base_prompt(self.profile)
        except RuntimeError as e:
            raise TurnSetupError(str(e)) from e
        include = self.engine.config.get("include_project_instructions", True) is not False
        instructions = discover_instructions(self.engine.cwd) if include and not self.chat else []
        try:
            from ..tools.registry import enabled_edit_tools
            edit_tools = enabled_edit_tools(self.engine.config.data)
        except ImportError:
            edit_tools = ["hashline_edit"]
        return build_system_prompt(base, self.engine.cwd, tool_names, instructions, self.ctx.skills,
                                   chat=self.chat, plan_mode=self.engine.live.mode == "plan",
                                   edit_tools=edit_tools)

    def tool_specs(self) -> list:
        spec = self.web_search().spec
        return [spec] if spec is not None else []

    def web_search(self):
        from .web_search import web_search_status
        return web_search_status(self.engine.config.data, self.engine.model, self.chat)

    def turn_extra(self, extra: dict) -> None:
        roots = [s.dir for s in self.ctx.skills]
        if roots:
            extra["read_roots"] = list(extra.get("read_roots", ())) + roots

    def hooks_runner(self):
        return self.runner

    def user_prompt_blocked(self, msg) -> Optional[str]:
        hooks = self.ctx.hooks
        if not hooks.has("user_prompt_submit"):
            return None
        res = hooks.run("user_prompt_submit", {"prompt": msg.text_for_model}, self.engine.cwd)
        for e in res.errors:
            self.engine.emit({"type": "error", "message": e})
        return (res.reason or "blocked") if res.blocked else None

    def observe(self, ev: dict) -> None:
        """post_tool_use is best effort: run it off the main loop once the output is out."""
        if ev.get("type") != "tool_output" or not self.ctx.hooks.has("post_tool_use"):
            return
        self.engine.pool.submit(self.runner.post_tool_use, ev.get("name") or "", ev.get("output") or "",
                                name="post-tool-hook")

    def stop_hooks(self) -> None:
        if not self.ctx.hooks.has("stop"):
            return
        res = self.ctx.hooks.run("stop", {}, self.engine.cwd)
        for m in res.infos:
            self.engine.emit({"type": "info", "message": m})
        for m in res.errors:
            self.engine.emit({"type": "error", "message": m})

    def doctor_lines(self) -> list:
        lines = []
        if self.chat:
            lines.append("project instructions: none (chat session)")
        elif self.engine.config.get("include_project_instructions", True) is False:
            lines.append("project instructions: disabled by include_project_instructions")
        else:
            from .instructions import discover_instructions
            files = discover_instructions(self.engine.cwd)
            lines.append("project instructions: " + (", ".join(f.path for f in files) or "none found"))
        lines.append(f"project trust: {'trusted' if self.ctx.trusted else 'untrusted'}"
                     + (" (chat session)" if self.chat else ""))
        lines.append(f"skills: {len(self.ctx.skills)} · custom commands: {len(self.ctx.commands)}")
        lines.append(self.web_search().line)
        return lines


def _skill_handler(skill):
    def handler(engine, args: str) -> None:
        from .skills import skill_message
        try:
            text = skill_message(skill, args)
        except OSError as e:
            engine.emit({"type": "error", "message": f"failed to read skill {skill.path}: {e}"})
            return
        typed = f"/{skill.slug} {args.strip()}".strip()
        engine.submit(QueuedMessage(content=typed, model_text=text, kind="command"))
    return handler


def _custom_handler(cmd):
    def handler(engine, args: str) -> None:
        from .custom_commands import CustomCommandError, expand_command
        try:
            text = expand_command(cmd, args)
        except CustomCommandError as e:
            engine.emit({"type": "error", "message": str(e)})
            return
        typed = f"/{cmd.name} {args.strip()}".strip()
        engine.submit(QueuedMessage(content=typed, model_text=text, kind="command"))
    return handler
