"""The builtin tool registry: the single place builtin tool specs are listed, in upstream's
definition order, plus argument parsing / error wrapping (``run_tool``) and approval
summaries (``summary_for``).

Tool implementations live in sibling modules and are imported lazily per call through
``_impl`` so building the tool list at startup stays cheap.
"""

from __future__ import annotations

import importlib
import json
import logging
from typing import Any, Dict, List, Optional, Tuple

from .base import (GATE_EDIT, GATE_READ, GATE_SHELL, GATE_WEB, ToolContext, ToolError, ToolSpec,
                   is_error_result)

log = logging.getLogger(__name__)

EDIT_TOOLS = ("str_replace", "hashline_edit", "write", "apply_patch")
DEFAULT_EDIT_TOOLS = ("hashline_edit",)
ALIASES = {"edit": "str_replace", "execute": "bash", "shell_command": "bash"}
SHELL_TOOLS = ("bash", "execute", "exec_command", "shell_command", "write_stdin")
PARALLEL_SAFE = ("read", "ls", "ripgrep", "outline")


def _impl(module: str, func: str):
    def run(args: dict, ctx: ToolContext) -> dict:
        return getattr(importlib.import_module(f"jucode.tools.{module}"), func)(args, ctx)
    run.__name__ = func
    return run


def _obj(props: dict, required: List[str]) -> dict:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


S = {"type": "string"}
I = {"type": "integer", "minimum": 0}
B = {"type": "boolean"}

_HASHLINE_EDIT_ITEM = _obj({
    "op": {"type": "string", "enum": ["replace", "append", "prepend"],
           "description": "replace pos..end, append after pos (or at EOF), prepend before pos (or at start)"},
    "pos": {"type": "string", "description": "anchor LINE#HASH copied from read().hashlines"},
    "end": {"type": "string", "description": "inclusive end anchor for replace (defaults to pos)"},
    "lines": {"description": "new literal lines (no LINE#HASH prefixes); [] deletes for replace",
              "anyOf": [{"type": "array", "items": S}, S]},
}, ["op", "lines"])

_TABLE: List[Tuple[str, str, dict, str, str, str]] = [
    ("read", "Read a file (text with LINE#HASH anchors in `hashlines`, or an image). Use offset/limit for "
             "large files.",
     _obj({"path": S, "offset": {**I, "description": "1-based first line (default 1)"},
           "limit": {**I, "description": "maximum number of lines"}}, ["path"]),
     GATE_READ, "files", "run_read"),
    ("str_replace", "Replace exact text in a file you have read. Each oldText must match exactly once; all "
                    "edits are matched against the original file and applied together.",
     _obj({"path": S, "edits": {"type": "array", "items": _obj({"oldText": S, "newText": S},
                                                               ["oldText", "newText"])}},
          ["path", "edits"]),
     GATE_EDIT, "files", "run_str_replace"),
    ("hashline_edit", "Edit a file you have read by LINE#HASH anchors from read().hashlines. All anchors "
                      "refer to the file as last read; stale anchors are rejected.",
     _obj({"path": S, "edits": {"type": "array", "items": _HASHLINE_EDIT_ITEM}}, ["path", "edits"]),
     GATE_EDIT, "hashline", "run_hashline_edit"),
    ("write", "Create a file or overwrite one you have read with the full content given.",
     _obj({"path": S, "content": S}, ["path", "content"]), GATE_EDIT, "files", "run_write"),
    ("apply_patch", "Apply a unified diff (git apply) to files in the workspace.",
     _obj({"patch": {**S, "description": "unified diff with ---/+++ headers and @@ hunks"}}, ["patch"]),
     GATE_EDIT, "patch", "run_apply_patch"),
    ("bash", "Run a shell command (sh -lc) in the workspace and return its exit code and output.",
     _obj({"command": S, "workdir": S, "timeout": {**I, "description": "seconds (default 60)"},
           "yield_time_ms": {**I, "description": "return early with a session_id if still running"}},
          ["command"]),
     GATE_SHELL, "shell", "run_bash"),
    ("exec_command", "Start a command; with yield_time_ms it keeps running as a session you can poll or "
                     "feed with write_stdin.",
     _obj({"cmd": S, "workdir": S, "timeout": I, "yield_time_ms": I, "max_output_tokens": I, "tty": B,
           "login": B}, ["cmd"]),
     GATE_SHELL, "shell", "run_exec_command"),
    ("write_stdin", "Send text to a running exec_command session and/or poll its output.",
     _obj({"session_id": {"type": "number"}, "text": S, "chars": S, "yield_time_ms": I}, ["session_id"]),
     GATE_SHELL, "shell", "run_write_stdin"),
    ("ls", "List a directory (directories end with /).", _obj({"path": S, "limit": I}, []),
     GATE_READ, "search", "run_ls"),
    ("ripgrep", "Search file contents with a regular expression (ripgrep).",
     _obj({"pattern": S, "path": S, "glob": S, "ignoreCase": B, "literal": B, "contextLines": I,
           "limit": I}, ["pattern"]),
     GATE_READ, "search", "run_ripgrep"),
    ("outline", "List the symbol lines (functions, classes, types) of a source file.",
     _obj({"path": S, "limit": {**I, "description": "default 200"}}, ["path"]),
     GATE_READ, "search", "run_outline"),
    ("checkpoint", "Create, list or restore file snapshots under .jucode/checkpoints.",
     _obj({"action": {"type": "string", "enum": ["create", "list", "restore"]}, "name": S, "id": S,
           "paths": {"type": "array", "items": S}}, ["action"]),
     GATE_READ, "checkpoints", "run_checkpoint"),
    ("web_fetch", "Fetch an http(s) URL and return its text (HTML converted to text unless raw).",
     _obj({"url": S, "max_bytes": I, "raw": B}, ["url"]), GATE_WEB, "web", "run_web_fetch"),
]

_SPECS: Dict[str, ToolSpec] = {
    name: ToolSpec(name=name, description=desc, parameters=params, run=_impl(mod, func), gate=gate,
                   parallel_safe=name in PARALLEL_SAFE)
    for name, desc, params, gate, mod, func in _TABLE
}
BUILTIN_NAMES = tuple(_SPECS)


def validate_edit_tools(value: Any) -> List[str]:
    """Normalize config ``edit_tools`` (``edit`` → ``str_replace``); upstream's config errors."""
    if value is None:
        return list(DEFAULT_EDIT_TOOLS)
    if not isinstance(value, list):
        raise ValueError("invalid edit_tools in config.json: expected an array of tool names")
    out: List[str] = []
    for entry in value:
        name = ALIASES.get(entry, entry) if isinstance(entry, str) else entry
        if name not in EDIT_TOOLS:
            raise ValueError(f"invalid edit_tools entry '{entry}' in config.json: use hashline_edit, "
                             "str_replace (alias edit), write, or apply_patch")
        if name not in out:
            out.append(name)
    return out


def enabled_edit_tools(config: Optional[dict]) -> List[str]:
    try:
        return validate_edit_tools((config or {}).get("edit_tools"))
    except ValueError:
        log.warning("invalid edit_tools in config; using the default")
        return list(DEFAULT_EDIT_TOOLS)


def builtin_specs(config: Optional[dict] = None) -> List[ToolSpec]:
    """Builtin tools in definition order, minus edit tools the config does not enable."""
    enabled = set(enabled_edit_tools(config))
    return [s for n, s in _SPECS.items() if n not in EDIT_TOOLS or n in enabled]


def canonical_name(name: str) -> str:
    return ALIASES.get(name, name)


def lookup(name: str) -> Optional[ToolSpec]:
    """A builtin spec by name or alias (``edit``, ``execute``, ``shell_command``)."""
    return _SPECS.get(canonical_name(name))


def disabled_edit_tool_error(name: str, config: Optional[dict]) -> Optional[str]:
    """Upstream's message when ``name`` is an edit tool the config leaves disabled, else None."""
    canon = canonical_name(name)
    if canon not in EDIT_TOOLS:
        return None
    enabled = enabled_edit_tools(config)
    if canon in enabled:
        return None
    listed = ", ".join(enabled) if enabled else "none"
    return (f"edit tool '{name}' is disabled by config (enabled edit tools: {listed}). Add it to the "
            "edit_tools array in config.json to enable it.")


def parse_arguments(raw_arguments: Any) -> Tuple[Optional[dict], Optional[str]]:
    """Tool-call arguments → dict, or an error text. Empty means ``{}`` (upstream default)."""
    if isinstance(raw_arguments, dict):
        return raw_arguments, None
    if raw_arguments is None or (isinstance(raw_arguments, str) and not raw_arguments.strip()):
        return {}, None
    try:
        value = json.loads(raw_arguments)
    except (ValueError, TypeError) as exc:
        return None, f"invalid JSON arguments: {exc}"
    if not isinstance(value, dict):
        return None, "invalid JSON arguments: expected an object"
    return value, None


def run_tool(spec: ToolSpec, raw_arguments: Any, ctx: ToolContext) -> Tuple[dict, bool]:
    """Run one tool call. Never raises: every failure becomes an error result."""
    args, err = parse_arguments(raw_arguments)
    if err is not None:
        return {"error": err}, True
    try:
        result = spec.run(args, ctx)
    except ToolError as exc:
        result = {"error": str(exc)}
    except RecursionError:
        result = {"error": f"{spec.name} failed: input too deeply nested"}
    except MemoryError:
        result = {"error": f"{spec.name} failed: out of memory"}
    except Exception as exc:  # noqa: BLE001 - a tool bug must not kill the turn
        log.exception("tool %s crashed", spec.name)
        result = {"error": f"{spec.name} failed: {exc}"}
    if not isinstance(result, dict):
        result = {"error": f"{spec.name} returned a non-object result"}
    return _serializable(result), is_error_result(result)


def _serializable(result: dict) -> dict:
    """The turn loop serializes results with orjson, which refuses integers beyond 64 bits (a
    model can echo ``10**40`` back through any argument) and non-JSON types; rather than crash
    the turn, such values become strings."""
    import orjson
    try:
        orjson.dumps(result)
        return result
    except (TypeError, orjson.JSONEncodeError):
        return _coerce(result)


def _coerce(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _coerce(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_coerce(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, (str, float)):
        return value
    if isinstance(value, int):
        return value if -2 ** 63 <= value < 2 ** 64 else str(value)
    return str(value)


def summary_for(name: str, args: Any) -> str:
    """``approval_request.summary``: the command for shell tools, else the path (upstream §5.16)."""
    if not isinstance(args, dict):
        return ""
    canon = canonical_name(name)

    def s(key: str) -> str:
        v = args.get(key)
        return v if isinstance(v, str) else ""

    if canon == "bash":
        return s("command") or s("cmd")
    if canon == "exec_command":
        return s("cmd") or s("command")
    if canon == "write_stdin":
        return s("text") or s("chars")
    if canon == "generate_image":
        return f"{s('path')}: {s('prompt')[:200]}"
    return s("path")
