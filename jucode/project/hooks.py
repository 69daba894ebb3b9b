"""Hooks: user-configured shell commands run at fixed points of a session.

``<profile>/hooks.json`` (and ``<cwd>/.jucode/hooks.json`` for trusted projects) map an event
name to a list of ``{"command": ..., "tools": [...]?}``. Each command runs through ``sh -c``
in cwd with ``JUCODE_HOOK_EVENT`` set and a JSON payload on stdin. A failing
``user_prompt_submit`` / ``pre_tool_use`` hook blocks the prompt / tool call.

Every hook runs in its own process group so a timeout kills everything it started (a hook
that backgrounds a server would otherwise outlive the engine).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
from dataclasses import dataclass, field
from typing import Optional

log = logging.getLogger(__name__)

HOOK_EVENTS = ("session_start", "user_prompt_submit", "pre_tool_use", "post_tool_use", "stop")
BLOCKING_EVENTS = ("user_prompt_submit", "pre_tool_use")
INFO_EVENTS = ("session_start", "stop")
TOOL_EVENTS = ("pre_tool_use", "post_tool_use")
HOOKS_FILE = "hooks.json"
DEFAULT_TIMEOUT = 30.0
_OUTPUT_LIMIT = 64 * 1024


@dataclass
class HookEntry:
    command: str
    tools: Optional[list[str]] = None   # None = every tool
    source: str = ""                    # the hooks.json it came from

    def applies_to(self, tool: Optional[str]) -> bool:
        return self.tools is None or tool is None or tool in self.tools


@dataclass
class HookSet:
    """Loaded hooks per event, plus problems found while loading (to show as errors)."""

    entries: dict[str, list[HookEntry]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def has(self, event: str) -> bool:
        return bool(self.entries.get(event))

    def run(self, event: str, payload: Optional[dict], cwd: str, timeout: float = DEFAULT_TIMEOUT,
            tool: Optional[str] = None) -> "HookResult":
        return run_hooks(self, event, payload, cwd, timeout=timeout, tool=tool)


@dataclass
class HookResult:
    """What the engine does with a hook run.

    ``blocked``/``reason``: refuse the prompt or tool call (blocking events only).
    ``infos``: lines for ``info`` events. ``errors``: lines for ``error`` events.
    """

    blocked: bool = False
    reason: str = ""
    infos: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _parse_file(path: str, hooks: HookSet) -> None:
    try:
        with open(path, "r", encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        return
    except (OSError, ValueError) as exc:
        hooks.errors.append(f"failed to load hooks from {path}: {exc}")
        return
    if not isinstance(data, dict):
        hooks.errors.append(f"failed to load hooks from {path}: expected a JSON object")
        return
    # Accept both {"session_start": [...]} and {"hooks": {"session_start": [...]}}.
    if isinstance(data.get("hooks"), dict):
        data = data["hooks"]
    for event, items in data.items():
        if event not in HOOK_EVENTS:
            continue
        if isinstance(items, (dict, str)):
            items = [items]
        if not isinstance(items, list):
            hooks.errors.append(f"invalid hooks for {event} in {path}: expected a list")
            continue
        for item in items:
            if isinstance(item, str):
                item = {"command": item}
            if not isinstance(item, dict) or not isinstance(item.get("command"), str) \
                    or not item["command"].strip():
                hooks.errors.append(f"invalid hook for {event} in {path}: missing command")
                continue
            tools = item.get("tools")
            if tools is not None:
                tools = [str(t) for t in tools] if isinstance(tools, list) else None
            hooks.entries.setdefault(event, []).append(HookEntry(item["command"], tools, path))


def hook_files(profile_dir: str, cwd: str, trusted: bool) -> list[str]:
    files = [os.path.join(profile_dir, HOOKS_FILE)]
    if trusted:
        files.append(os.path.join(cwd, ".jucode", HOOKS_FILE))
    return files


def load_hooks(profile_dir: str, cwd: str, trusted: bool) -> HookSet:
    """User hooks first, then the project's (trusted projects only)."""
    hooks = HookSet()
    for path in hook_files(profile_dir, cwd, trusted):
        _parse_file(path, hooks)
    return hooks


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        if os.name == "nt":
            proc.kill()
        else:
            os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass


@dataclass
class _Run:
    code: Optional[int]       # None = timed out / could not start
    stdout: str
    stderr: str
    failure: str = ""         # why code is None


def _run_one(command: str, event: str, stdin_data: bytes, cwd: str, timeout: float) -> _Run:
    env = dict(os.environ)
    env["JUCODE_HOOK_EVENT"] = event
    argv = ["cmd", "/C", command] if os.name == "nt" else ["sh", "-c", command]
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=(os.name != "nt"))
    except OSError as exc:
        return _Run(None, "", "", f"failed to start: {exc}")
    try:
        out, err = proc.communicate(stdin_data, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        try:
            out, err = proc.communicate(timeout=2.0)
        except subprocess.TimeoutExpired:
            # Something outside the group still holds the pipes; stop waiting for it.
            for pipe in (proc.stdout, proc.stderr):
                try:
                    pipe.close()
                except OSError:
                    pass
            proc.wait()
            out, err = b"", b""
        secs = f"{timeout:g}"
        return _Run(None, _decode(out), _decode(err), f"timed out after {secs}s and was killed")
    return _Run(proc.returncode, _decode(out), _decode(err))


def _decode(data: Optional[bytes]) -> str:
    if not data:
        return ""
    return data[:_OUTPUT_LIMIT].decode("utf-8", errors="replace")


def run_hooks(hooks: HookSet, event: str, payload: Optional[dict], cwd: str,
              timeout: float = DEFAULT_TIMEOUT, tool: Optional[str] = None) -> HookResult:
    """Run every hook configured for ``event`` in order; stop at the first blocking failure.

    ``payload`` is merged into ``{"event", "cwd"}`` for stdin (``prompt`` for
    user_prompt_submit, ``tool`` + ``arguments``/``output`` for the tool events). ``tool`` filters
    entries with a ``tools`` list. Blocking on the calling thread is intended: the caller is
    the worker (tool hooks) or the main loop at startup/turn boundaries.
    """
    result = HookResult()
    entries = [e for e in hooks.entries.get(event, []) if e.applies_to(tool)]
    if not entries:
        return result
    body = {"event": event, "cwd": cwd}
    body.update(payload or {})
    stdin_data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    for entry in entries:
        run = _run_one(entry.command, event, stdin_data, cwd, timeout)
        if run.code is None:
            msg = f"{event} hook {run.failure}: {entry.command}"
            log.warning("%s", msg)
            result.errors.append(msg)
            if event in BLOCKING_EVENTS:
                # A policy hook that never answered must not silently allow the action.
                result.blocked = True
                result.reason = msg
                return result
            continue
        out = run.stdout.strip()
        if run.code != 0 and event in BLOCKING_EVENTS:
            result.blocked = True
            result.reason = run.stderr.strip() or out or f"{event} hook exited with code {run.code}"
            return result
        if event in INFO_EVENTS and out:
            result.infos.append(f"hook ({event}): {out}")
        if run.code != 0:
            log.info("%s hook exited with code %s: %s", event, run.code, run.stderr.strip())
    return result


def blocked_tool_output(reason: str) -> dict:
    """The tool result for a call refused by a pre_tool_use hook."""
    return {"error": f"blocked by pre_tool_use hook: {reason}"}


