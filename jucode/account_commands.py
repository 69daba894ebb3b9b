"""Account and setup commands a desktop palette sends: ``/login``, ``/login-paste``, ``/usage``,
``/subagents`` and ``/sandbox``.

``/login`` is bring-your-own-key: ``/login <provider> <api-key>`` stores the key in auth.json
(``providers.<id>``, where upstream keeps it) and switches config.json to that provider's
endpoint and wire protocol; ``/login`` alone answers with ``login_picker`` so a client can offer
the providers. The JuCode gateway's browser sign-in (and so ``/login-paste`` and ``/usage``'s
plan view) needs that gateway, which this engine does not talk to: those say so plainly.
Keys are only ever shown masked.
"""

from __future__ import annotations

import os

from .builtin_commands import mask
from .commands import command


def _providers():
    from .llm.catalog import PROVIDERS

    return PROVIDERS


def _order() -> list:
    providers = _providers()
    return ["jucode"] + [p for p in providers if p != "jucode"]


def _stored_key(engine, provider: str):
    from .auth_file import read_auth

    keys = read_auth(engine.profile).get("providers")
    key = keys.get(provider) if isinstance(keys, dict) else None
    return key if isinstance(key, str) and key else None


def _env_key(engine):
    name = str(engine.config.get("api_key_env") or "OPENAI_API_KEY")
    return os.environ.get(name) or None


def _detail(engine, pid: str, tmpl: dict) -> str:
    if tmpl.get("auth") == "none":
        return f"{tmpl['base_url']} · no key needed"
    if tmpl.get("auth") == "oauth":
        return "browser sign-in through the JuCode gateway (not available in this engine)"
    key = _stored_key(engine, pid)
    return f"{tmpl['base_url']} · " + (f"key {mask(key)}" if key else "no key stored")


def picker(engine) -> dict:
    active = engine.config.get("provider") or "openai"
    providers = _providers()
    return {"type": "login_picker", "providers": [
        {"id": pid, "label": providers[pid]["label"], "detail": _detail(engine, pid, providers[pid]),
         "active": pid == active, "wants_key": providers[pid].get("auth") == "key"}
        for pid in _order()]}


def _switch_to(engine, pid: str) -> None:
    """Point config.json at provider ``pid`` (its endpoint, protocol and, if the current model
    is not one it serves, its first model). Re-login to the active provider changes nothing."""
    cfg = engine.config
    if (cfg.get("provider") or "openai") == pid:
        return
    tmpl = _providers()[pid]
    changes = {"provider": pid, "base_url": tmpl["base_url"], "protocol": tmpl["protocol"]}
    if engine.model not in tmpl["models"]:
        changes["model"] = tmpl["models"][0]
    cfg.update(**changes)
    if "model" in changes:
        engine.model = changes["model"]


@command("/login", args="[provider|list] [api-key]", description="Sign in to a model provider")
def _login(engine, args: str) -> None:
    parts = args.split()
    if not parts:
        engine.emit(picker(engine))
        return
    providers = _providers()
    pid = parts[0].lower()
    if pid == "list":
        for row in picker(engine)["providers"]:
            mark = "*" if row["active"] else " "
            engine.emit({"type": "info", "message": f"{mark} {row['id']} ({row['label']}): {row['detail']}"})
        return
    if pid not in providers:
        if pid.startswith(("http://", "https://")):
            engine.emit({"type": "error", "message": "/login <web-url> <api-url> signs in to a JuCode gateway, "
                                                     "which this engine does not support; use /login <provider> <api-key>"})
            return
        engine.emit({"type": "error", "message": f"unknown provider: {parts[0]} (known: {', '.join(_order())})"})
        return
    tmpl = providers[pid]
    if tmpl.get("auth") == "oauth":
        engine.emit({"type": "error", "message": f"{tmpl['label']} sign-in needs the JuCode gateway's browser flow, "
                                                 "which this engine does not include; use /login <provider> <api-key>"})
        return
    if len(parts) > 2:
        engine.emit({"type": "error", "message": "usage: /login <provider> <api-key>"})
        return
    key = parts[1] if len(parts) == 2 else None
    if tmpl.get("auth") == "key":
        if key is None:
            key = _stored_key(engine, pid)
            if key is None and (engine.config.get("provider") or "openai") == pid:
                key = _env_key(engine)
            if key is None:
                engine.emit({"type": "error", "message": f"{tmpl['label']} needs an API key: /login {pid} <api-key>"})
                return
        else:
            from .auth_file import section, update_auth
            try:
                update_auth(engine.profile, lambda data: section(data, "providers").__setitem__(pid, key))
            except OSError as exc:
                engine.emit({"type": "error", "message": f"failed to save auth.json: {exc.strerror or exc}"})
                return
    elif key is not None:
        engine.emit({"type": "error", "message": f"{tmpl['label']} takes no API key: /login {pid}"})
        return
    try:
        _switch_to(engine, pid)
    except OSError as exc:
        engine.emit({"type": "error", "message": f"failed to save config.json: {exc.strerror or exc}"})
        return
    engine.on_model_changed()          # re-resolve the key: model_status follows on the next tick
    shown = f" (key {mask(key)})" if key else ""
    engine.emit({"type": "status", "message": f"logged in to {tmpl['label']}{shown}"})


@command("/login-paste", args="<redirect-url-or-code>", description="Finish a manual provider login", advanced=True)
def _login_paste(engine, args: str) -> None:
    engine.emit({"type": "error", "message": "no sign-in is waiting for a pasted code (browser sign-in is not "
                                             "available in this engine; use /login <provider> <api-key>)"})


@command("/usage", description="Show what this session has cost")
def _usage(engine, args: str) -> None:
    engine.emit({"type": "info", "message": f"session cost: ${engine.cost:.4f} "
                                            f"({engine.config.get('provider') or 'openai'}, {engine.model})"})
    if (engine.config.get("provider") or "openai") == "jucode":
        engine.emit({"type": "info", "message": "JuCode plan, balance and recent calls need the JuCode gateway, "
                                                "which this engine does not talk to"})


@command("/subagents", args="[add <model> <when to use>|remove <model>]",
         description="Choose the models subagents may use")
def _subagents(engine, args: str) -> None:
    rows = [dict(e) for e in engine.config.get("subagent_models") or [] if isinstance(e, dict) and e.get("name")]
    parts = args.split(None, 2)
    if not parts:
        if not rows:
            engine.emit({"type": "info", "message": "subagent models: none (children use the main model); "
                                                    "add one with /subagents add <model> <when to use>"})
        for e in rows:
            engine.emit({"type": "info", "message": f"subagent model {e['name']}: {e.get('description') or ''}".rstrip()})
        return
    verb = parts[0]
    if verb == "add" and len(parts) == 3:
        name, description = parts[1], parts[2].strip()
        rows = [e for e in rows if e["name"] != name] + [{"name": name, "description": description}]
        message = f"subagent model {name} added"
    elif verb == "remove" and len(parts) == 2:
        name = parts[1]
        if not any(e["name"] == name for e in rows):
            engine.emit({"type": "error", "message": f"no subagent model {name}"})
            return
        rows = [e for e in rows if e["name"] != name]
        message = f"subagent model {name} removed"
    else:
        engine.emit({"type": "error", "message": "usage: /subagents [add <model> <when to use>|remove <model>]"})
        return
    try:
        engine.config.update(subagent_models=rows)
    except OSError as exc:
        engine.emit({"type": "error", "message": f"failed to save config.json: {exc.strerror or exc}"})
        return
    engine.emit({"type": "status", "message": message})


@command("/sandbox", args="[read-only|workspace-write|full-access]", description="Show or switch the sandbox")
def _sandbox(engine, args: str) -> None:
    if args.strip():
        engine.emit({"type": "error", "message": "sandboxing is not available in this engine: commands run with "
                                                 "your own permissions, gated by the approval mode (/permissions)"})
        return
    engine.emit({"type": "info", "message": "sandbox: none (commands run with your own permissions; "
                                            f"approval mode {engine.live.mode} decides what asks first)"})
