"""The op table: parse a stdin line, validate the op's fields, call its handler.

One entry per op; hosts add theirs (MCP, subagents, plans, actions) through
``Extensions.ops()``. Validation failures are ``error`` events with upstream's texts; nothing
raised here reaches stdout as a traceback.
"""

from __future__ import annotations

import orjson

from .messages import QueuedMessage


def dispatch_line(engine, raw: bytes) -> None:
    line = raw.strip()
    if not line:
        return
    try:
        op = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        engine.emit({"type": "error", "message": f"invalid command: {e}"})
        return
    if not isinstance(op, dict):
        engine.emit({"type": "error", "message": f"invalid command: expected a JSON object, got {_kind(op)}"})
        return
    name = op.get("op")
    if not isinstance(name, str):
        name = "" if name is None else orjson.dumps(name).decode()
    handler = CORE_OPS.get(name) or engine.ext.ops().get(name)
    if handler is None:
        engine.emit({"type": "error", "message": f"unknown op: {name}"})
        return
    handler(engine, op)


def _kind(v) -> str:
    return {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean"}.get(
        type(v), "null" if v is None else type(v).__name__)


def _str_field(op: dict, key: str, default: str = "") -> str | None:
    v = op.get(key, default)
    if v is None:
        return default
    return v if isinstance(v, str) else None


def op_user_message(engine, op: dict) -> None:
    content = _str_field(op, "content")
    if content is None:
        engine.emit({"type": "error", "message": "user_message requires content: a string"})
        return
    for key in ("images", "files"):
        if op.get(key) is not None and not isinstance(op.get(key), list):
            engine.emit({"type": "error", "message": f"user_message {key} must be an array of paths"})
            return
    images, files = engine.attachments(op.get("images"), op.get("files"))
    engine.submit(QueuedMessage(content=content, images=images, files=files))


def op_command(engine, op: dict) -> None:
    text = _str_field(op, "input")
    if text is None:
        engine.emit({"type": "error", "message": "command requires input: a string"})
        return
    from .commands import run_command_line
    run_command_line(engine, text)


def _index(engine, op: dict):
    idx = op.get("index")
    if idx is not None and (isinstance(idx, bool) or not isinstance(idx, int)):
        engine.emit({"type": "error", "message": f"{op.get('op')} index must be an integer"})
        return False, None
    return True, idx


def op_steer(engine, op: dict) -> None:
    ok, idx = _index(engine, op)
    if ok:
        engine.steer(idx)


def op_unqueue(engine, op: dict) -> None:
    ok, idx = _index(engine, op)
    if ok:
        engine.unqueue(idx)


def op_interrupt(engine, op: dict) -> None:
    ok, idx = _index(engine, op)
    if not ok:
        return
    if "index" in op and idx is not None:
        engine.interrupt_and_send(idx)
    else:
        engine.interrupt()


def op_continue(engine, op: dict) -> None:
    engine.continue_turn()


def op_approve(engine, op: dict) -> None:
    engine.approve(op)


def op_set_approval_mode(engine, op: dict) -> None:
    engine.set_mode(op.get("mode"))


def op_shutdown(engine, op: dict) -> None:
    engine.request_exit()


CORE_OPS = {
    "user_message": op_user_message,
    "command": op_command,
    "steer": op_steer,
    "unqueue": op_unqueue,
    "interrupt": op_interrupt,
    "continue": op_continue,
    "approve": op_approve,
    "set_approval_mode": op_set_approval_mode,
    "shutdown": op_shutdown,
}
