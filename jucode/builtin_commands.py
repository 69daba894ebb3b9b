"""Built-in slash commands of the core: help, quit, model, effort, permissions, approve, image,
context, config, doctor. Session, MCP, project and goal commands live with their hosts."""

from __future__ import annotations

import os
import shutil

from .commands import command
from .messages import check_image


@command("/help", description="Show available commands", aliases=("/",))
def _help(engine, args: str) -> None:
    from .commands import command_list
    names = [f"{c['command']} {c['args']}".strip() for c in command_list(engine)]
    engine.emit({"type": "info", "message": " ".join(names)})


def _models_for_view(engine) -> list:
    try:
        from .llm.catalog import list_models
        infos = list(list_models(engine.config.data))
    except ImportError:
        infos = []
    if engine.model not in [i.name for i in infos]:
        infos.insert(0, engine.model_info())
    return [{"model": i.name, "label": getattr(i, "label", None) or None, "active": i.name == engine.model,
             "context_window": int(i.context_window or 0), "max_output_tokens": int(i.max_output_tokens or 0),
             "reasoning_efforts": list(i.reasoning_efforts or [])} for i in infos]


def _info(engine, name: str):
    from .models import resolve_model_info
    return resolve_model_info(engine.config.data, name)


def _supports_effort(info) -> bool:
    efforts = [e for e in (info.reasoning_efforts or []) if e != "none"]
    return bool(efforts)


def _persist_model(engine) -> None:
    try:
        engine.config.update(model=engine.model, reasoning_effort=engine.effort)
    except OSError as e:
        engine.emit({"type": "error", "message": f"failed to save config: {e}"})


@command("/model", args="[model] [effort]", description="Choose the model and reasoning effort")
def _model(engine, args: str) -> None:
    parts = args.split()
    if not parts:
        engine.emit({"type": "model_view", "models": _models_for_view(engine),
                     "active_effort": engine.effective_effort()})
        return
    if len(parts) > 2:
        engine.emit({"type": "error", "message": "usage: /model [model] [none|low|medium|high]"})
        return
    name = parts[0].strip().strip("\"'").strip()   # `/model "" high` names no model
    if not name:
        engine.emit({"type": "error", "message": "model cannot be empty"})
        return
    info = _info(engine, name)
    efforts = list(info.reasoning_efforts or [])
    if len(parts) == 2:
        effort = parts[1].lower()
        if efforts and effort not in efforts:
            engine.emit({"type": "error", "message": f"{name} does not support reasoning effort: {effort}"})
            return
    elif not efforts or engine.effort in efforts:
        effort = engine.effort
    elif "medium" in efforts:
        effort = "medium"
    else:
        effort = efforts[0]
    engine.model, engine.effort = name, effort
    engine.on_model_changed()
    _persist_model(engine)
    engine.emit(engine.model_status_event())


@command("/effort", args="[effort]", description="Cycle or set the reasoning effort")
def _effort(engine, args: str) -> None:
    info = engine.model_info()
    efforts = list(info.reasoning_efforts or [])
    if not _supports_effort(info):
        engine.emit({"type": "error", "message": f"{engine.model} does not support reasoning effort"})
        return
    want = args.strip().lower()
    if not want:
        cur = engine.effective_effort()
        want = efforts[(efforts.index(cur) + 1) % len(efforts)] if cur in efforts else efforts[0]
    elif want not in efforts:
        engine.emit({"type": "error", "message": f"{engine.model} does not support reasoning effort: {want}"})
        return
    engine.effort = want
    _persist_model(engine)
    engine.emit(engine.model_status_event())


@command("/permissions", args="[manual|plan|auto-edit|auto|full-access]", description="Show or set the approval mode")
def _permissions(engine, args: str) -> None:
    if not args.strip():
        engine.emit({"type": "info", "message": f"approval mode: {engine.live.mode}"})
        engine.emit({"type": "approval_mode", "mode": engine.live.mode})
        return
    engine.set_mode(args.strip())


@command("/approve", args="<call-id> <allow|deny> [always|once] [--hunks id1,id2]",
         description="Answer a pending approval", advanced=True)
def _approve(engine, args: str) -> None:
    usage = "usage: /approve <call-id> <allow|deny> [always] [--hunks id1,id2]"
    toks = args.split()
    if len(toks) < 2:
        engine.emit({"type": "error", "message": usage})
        return
    op = {"op": "approve", "call_id": toks[0], "decision": toks[1]}
    rest = toks[2:]
    i = 0
    while i < len(rest):
        t = rest[i]
        if t == "always":
            op["always"] = True
        elif t == "once":
            op["always"] = False
        elif t == "--hunks":
            if i + 1 >= len(rest):
                engine.emit({"type": "error", "message": "--hunks requires a comma-separated list of hunk ids"})
                return
            op["hunks"] = [h for h in rest[i + 1].split(",") if h]
            i += 1
        elif t.startswith("--hunks="):
            op["hunks"] = [h for h in t.split("=", 1)[1].split(",") if h]
        else:
            engine.emit({"type": "error", "message": f"unexpected token '{t}'; {usage}"})
            return
        i += 1
    engine.approve(op)


@command("/image", args="<path>", description="Attach an image to your next message")
def _image(engine, args: str) -> None:
    path = args.strip()
    if not path:
        engine.emit({"type": "error", "message": "usage: /image <path> — attach an image to your next message"})
        return
    path = os.path.expanduser(path)
    if not os.path.isabs(path):
        path = os.path.join(engine.cwd, path)
    reason = check_image(path)
    if reason:
        engine.emit({"type": "error", "message": f"cannot attach {reason}"})
        return
    engine.staged_images.append(path)
    engine.emit({"type": "info", "message": f"attached {path}; it will be sent with your next message "
                                            f"({len(engine.staged_images)} staged)"})


@command("/context", description="Show context statistics")
def _context(engine, args: str) -> None:
    from .context_stats import context_lines
    for line in context_lines(engine):
        engine.emit({"type": "info", "message": line})
    engine.sessions.emit_context_usage()


@command("/stats", description="Show context statistics", advanced=True)
def _stats(engine, args: str) -> None:
    _context(engine, args)


def mask(secret: str | None) -> str:
    if not secret:
        return "<unset>"
    if len(secret) <= 8:
        return "****"
    return secret[:3] + "…" + secret[-4:]


JUCODE_URL = "https://api.jucode.net"     # upstream's default gateway web/API URL (shown, not used)


@command("/config", description="Show the effective configuration", advanced=True)
def _config(engine, args: str) -> None:
    key, base_url = _credentials(engine)
    c = engine.config
    engine.emit({"type": "info", "message": (
        f"provider={c.get('provider')} model={engine.model} reasoning_effort={engine.effective_effort()} "
        f"base_url={base_url} jucode_web_url={c.get('jucode_web_url') or JUCODE_URL} "
        f"jucode_api_url={c.get('jucode_api_url') or JUCODE_URL} "
        f"auth_key={mask(key)} api_key_env={c.get('api_key_env')} "
        f"retry_attempts={c.get('retry_attempts')} protocol={c.get('protocol') or 'auto'} "
        f"config_path={c.path}")})


def _credentials(engine):
    try:
        from .turn_setup import credentials
        return credentials(engine)
    except Exception:
        return None, os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"


@command("/doctor", description="Check the setup")
def _doctor(engine, args: str) -> None:
    key, base_url = _credentials(engine)
    lines = [
        f"provider: {engine.config.get('provider')} · protocol: {engine.config.get('protocol') or 'auto'}",
        f"model: {engine.model} ({engine.effective_effort()})",
        f"base_url: {base_url}",
        f"auth: {'API key ' + mask(key) if key else 'missing: set ' + str(engine.config.get('api_key_env'))}",
        f"cwd: {engine.cwd}",
        f"git: {shutil.which('git') or 'not found'}",
        f"rg: {shutil.which('rg') or 'not found (built-in search is used)'}",
        f"logging: {engine.profile / 'logs' / 'jucode.log'}",
    ]
    for _, extra in engine.ext._each("doctor_lines"):
        lines.extend(extra or [])
    for line in lines:
        engine.emit({"type": "info", "message": line})


@command("/quit", description="Quit JuCode", aliases=("/exit",))
def _quit(engine, args: str) -> None:
    engine.request_exit()
