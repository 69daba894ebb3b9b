"""``auto`` mode's safety classifier: a quick model verdict on a shell command before asking.

In ``auto`` mode a shell call that the gating table would ask about is first shown to the
safety model. Only an explicit ``{"outcome": "allow"}`` lets it run unasked; a deny, an
unreadable answer, a model error or a timeout all fall back to the usual approval request, so
the classifier can only save the user a click, never take a decision away from them.

Settings follow upstream: ``safety_model`` (else ``compact_model``) when that model is listed
in ``models[]``, otherwise the session's model; effort ``safety_reasoning_effort`` (default
``low``); one attempt, 30 s read timeout, at most 512 output tokens.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from typing import Callable, Optional

log = logging.getLogger("jucode.safety")

READ_TIMEOUT_SECONDS = 30.0
MAX_OUTPUT_TOKENS = 512

INSTRUCTIONS = """\
You review shell commands that an autonomous coding agent wants to run on a developer's machine,
inside the developer's project directory. The developer chose a mode in which routine commands
run without asking them; your verdict decides whether this command is routine.

Allow commands whose effects stay inside the project and are easy to undo or harmless: reading
and searching files, listing directories, git status/diff/log/add/commit, building, linting,
formatting and running tests, creating or editing files inside the project, running the
project's own scripts.

Deny anything else, in particular: deleting or overwriting files outside the project or deleting
large parts of it; git push, force operations or history rewrites; sudo or changing system
configuration; installing software globally; sending files, environment variables or secrets over
the network; downloading and executing code; killing processes that are not the agent's own;
commands whose effect you cannot tell from the text.

Answer with one JSON object and nothing else:
{"outcome": "allow" or "deny", "rationale": "one short sentence"}"""


@dataclass
class SafetySettings:
    make_provider: Callable
    model: str
    effort: str
    session_id: str
    connect_timeout: float


def safety_settings(engine) -> SafetySettings:
    """Main thread, at turn setup (the provider factory resolves credentials there)."""
    from .models import effective_effort, resolve_model_info
    from .turn_setup import provider_factory

    cfg = engine.config
    configured = {m.get("name") for m in (cfg.get("models") or []) if isinstance(m, dict)}
    name = cfg.get("safety_model") or cfg.get("compact_model")
    model = name if name and name in configured else engine.model
    effort = effective_effort(resolve_model_info(cfg.data, model), cfg.get("safety_reasoning_effort") or "low")
    return SafetySettings(make_provider=provider_factory(engine, model), model=model, effort=effort,
                          session_id=engine.session_id,
                          connect_timeout=float(cfg.get("connect_timeout_seconds") or 30))


def safety_check(engine) -> Optional[Callable]:
    """Main thread: the gate's hook ``check(ctx, tool, args) -> (outcome, rationale)``, or None
    when no classifier is needed or can run: the mode is not ``auto`` when the turn starts
    (a turn switched to auto midway keeps asking, the safe side; it saves every other turn the
    credential lookup), replay scripts stay deterministic, or there are no credentials."""
    if engine.live.mode != "auto" or engine.replay_script() is not None:
        return None
    try:
        settings = safety_settings(engine)
    except Exception:
        log.debug("safety classifier unavailable", exc_info=True)
        return None
    post = engine.post

    def on_usage(model: str, usage: dict) -> None:
        post({"type": "_helper_usage", "model": model, "usage": usage})

    def check(ctx, tool: str, args: dict) -> tuple[str, str]:
        return classify(settings, tool, args, ctx.settings.cwd, ctx.interrupt, on_usage)
    return check


def describe_call(tool: str, args: dict, cwd: str) -> str:
    """What the classifier is shown: the tool, its command and where it runs."""
    command = args.get("command") if isinstance(args.get("command"), str) else args.get("cmd")
    shown = {"tool": tool, "command": command if isinstance(command, str) else None,
             "workdir": args.get("workdir") if isinstance(args.get("workdir"), str) else None,
             "project_directory": cwd}
    if tool == "write_stdin":
        shown["input"] = args.get("text") if isinstance(args.get("text"), str) else args.get("chars")
    return json.dumps(shown, ensure_ascii=False)


def parse_verdict(text: str) -> tuple[str, str]:
    """``(outcome, rationale)`` from the model's text; ``("unreadable", "")`` if no verdict."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            obj, _ = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(obj, dict) and isinstance(obj.get("outcome"), str):
            rationale = obj.get("rationale")
            return obj["outcome"].strip().lower(), rationale if isinstance(rationale, str) else ""
        start = text.find("{", start + 1)
    return "unreadable", ""


def classify(settings: SafetySettings, tool: str, args: dict, cwd: str, cancel: threading.Event,
             on_usage: Optional[Callable[[str, dict], None]] = None) -> tuple[str, str]:
    """One model request; returns ``(outcome, rationale)``. Never raises except ``Interrupted``."""
    from .llm.base import Interrupted, ModelRequest

    request = ModelRequest(
        model=settings.model, instructions=INSTRUCTIONS,
        input=[{"role": "user", "content": [{"type": "input_text", "text": describe_call(tool, args, cwd)}]}],
        reasoning_effort=settings.effort, max_output_tokens=MAX_OUTPUT_TOKENS, session_id=settings.session_id,
        read_timeout=READ_TIMEOUT_SECONDS, connect_timeout=settings.connect_timeout)
    chunks: list = []

    def sink(ev) -> None:
        if ev.kind == "text" and ev.delta:
            chunks.append(ev.delta)
    try:
        response = settings.make_provider().stream(request, sink, cancel)
    except Interrupted:
        raise
    except Exception as exc:               # one attempt: any failure means "ask the user"
        log.info("safety classifier unavailable (%s); asking the user", exc)
        return "error", ""
    if on_usage is not None and response.usage is not None:
        on_usage(settings.model, response.usage.as_event_fields())
    text = "".join(chunks)
    if not text:
        text = "".join(p.get("text", "") for it in response.items if it.get("type") == "message"
                       for p in it.get("content") or [] if isinstance(p, dict))
    return parse_verdict(text)
