"""The project's built-in slash commands: ``/pin``, ``/skills`` and ``/trust``.

They register with the core registry at import (ProjectHost imports this module) and reach the
loaded project context through ``engine.ext.host("ProjectHost")``.
"""

from __future__ import annotations

from ..commands import command

PIN_USAGE = "usage: /pin <skill>"
SKILLS_USAGE = "usage: /skills [list|enable|disable] [name]"


def _host(engine):
    return engine.ext.host("ProjectHost")


@command("/trust", args="[yes|no|repo]", description="Trust this project's skills, commands and hooks")
def _trust(engine, args: str) -> None:
    from .trust import trust_command
    host = _host(engine)
    if host is not None and host.chat:
        engine.emit({"type": "info", "message": "chat sessions do not load project resources"})
        return
    out = trust_command(str(engine.profile), engine.cwd, args)
    engine.emit({"type": out.kind, "message": out.message})
    if out.changed and host is not None:
        host.reload()


@command("/pin", args="<skill>", description="Pin a skill into the conversation")
def _pin(engine, args: str) -> None:
    from .skills import find_skill, read_skill_content
    name = args.strip()
    if engine.turn is not None:
        engine.emit({"type": "error", "message": "cannot pin a skill while a response is running"})
        return
    if not name:
        engine.emit({"type": "error", "message": PIN_USAGE})
        return
    host = _host(engine)
    skill = find_skill(host.ctx.skills if host is not None else [], name)
    if skill is None:
        engine.emit({"type": "error", "message": f"skill not found: {name}"})
        return
    try:
        content = read_skill_content(skill)
    except OSError as e:
        engine.emit({"type": "error", "message": f"failed to read skill {skill.path}: {e}"})
        return
    engine.sessions.append({"type": "pinned_skill", "name": skill.name, "path": skill.path, "content": content})
    engine.emit({"type": "info", "message": f"pinned skill {skill.name}"})
    engine.sessions.emit_context_usage()


@command("/skills", args="[list|enable|disable] [name]", description="List, enable or disable skills")
def _skills(engine, args: str) -> None:
    from .skills import discover_skills, find_skill, set_skill_enabled
    host = _host(engine)
    parts = args.split(None, 1)
    sub = parts[0].lower() if parts else "list"
    name = parts[1].strip() if len(parts) > 1 else ""
    trusted = bool(host and host.ctx.trusted)
    chat = bool(host and host.chat)
    every = discover_skills(str(engine.profile), engine.cwd, trusted, chat=chat, include_disabled=True)
    if sub == "list":
        if not every:
            engine.emit({"type": "info", "message": "no skills found"})
            return
        for s in every:
            state = "" if s.enabled else " [disabled]"
            engine.emit({"type": "info", "message": f"/{s.slug} ({s.source}){state}: {s.description}"})
        return
    if sub in ("enable", "disable"):
        if not name:
            engine.emit({"type": "error", "message": SKILLS_USAGE})
            return
        skill = find_skill(every, name)
        if skill is None:
            engine.emit({"type": "error", "message": f"skill not found: {name}"})
            return
        if skill.source != "user":
            engine.emit({"type": "error", "message": f"only skills in {engine.profile / 'skills'} can be "
                                                     f"enabled or disabled: {skill.name}"})
            return
        try:
            set_skill_enabled(str(engine.profile), skill.name, sub == "enable")
        except OSError as e:
            engine.emit({"type": "error", "message": f"failed to save skill state: {e}"})
            return
        engine.emit({"type": "status", "message": f"skill {skill.name} {sub}d"})
        if host is not None:
            host.reload()
        return
    if sub in ("install", "update", "uninstall", "sync"):
        engine.emit({"type": "error", "message": f"/skills {sub}: the skill marketplace is not available in this "
                                                 "engine; put skills in " + str(engine.profile / "skills")})
        return
    engine.emit({"type": "error", "message": SKILLS_USAGE})
