"""The contract between the turn loop and every tool.

A tool is a :class:`ToolSpec`: its wire definition (name, description, JSON schema), how the
approval table classifies it, and a ``run(args, ctx)`` function. ``run`` receives already-parsed
arguments (a dict) and returns a JSON-able dict; it never raises for bad input: it returns
``{"error": "..."}``. Anything it raises anyway is turned into an error result by the runner.

Tools run on worker threads. They must check ``ctx.interrupt`` at their blocking points and
may report progress through ``ctx.progress`` (a ``tool_update`` event).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

# Gate classes used by the approval table (jucode/approvals.py).
GATE_READ = "read"          # read, ls, ripgrep, outline, checkpoint, goal/plan, subagent tools
GATE_EDIT = "edit"          # write, str_replace, hashline_edit, apply_patch
GATE_SHELL = "shell"        # bash, exec_command, write_stdin
GATE_WEB = "web"            # web_fetch, web_search
GATE_MCP = "mcp"            # mcp__* (read-only when the server marks readOnlyHint)
GATE_IMAGE = "image"        # generate_image


class ToolError(Exception):
    """Raised inside a tool to return ``{"error": message}`` quickly."""


@dataclass
class ToolContext:
    """What a tool may see of the engine. One per call; cheap to build."""

    cwd: str                                   # workspace root (realpath)
    interrupt: threading.Event                 # set when the turn is interrupted
    progress: Callable[[str], None] = lambda _msg: None   # emits tool_update
    read_state: dict = field(default_factory=dict)        # realpath -> fingerprint (read-before-edit)
    write_root: Optional[str] = None           # confined write root (subagent worktrees); None = cwd
    profile_dir: str = ""
    config: dict = field(default_factory=dict)
    shell_sessions: Any = None                 # jucode.tools.shell.ShellSessions (exec_command)
    agent_path: str = "/root"                  # "/root" for the main agent, else the subagent path
    call_id: str = ""
    extra: dict = field(default_factory=dict)  # family-specific handles (subagents, goal, mcp)


@dataclass
class ToolSpec:
    name: str
    description: str
    parameters: dict
    run: Callable[[dict, ToolContext], dict]
    gate: str = GATE_READ
    parallel_safe: bool = False                # may run concurrently in a read-only batch
    read_only_hint: bool = False               # GATE_MCP tools the server marks readOnlyHint

    def definition(self) -> dict:
        """Responses-style function definition (converted per wire API in jucode/llm)."""
        return {"type": "function", "name": self.name, "description": self.description,
                "parameters": self.parameters, "strict": False}


def is_error_result(result: Any) -> bool:
    """Upstream's rule: an object with "error", a non-zero exit_code, or timed_out true."""
    if not isinstance(result, dict):
        return False
    if "error" in result and result["error"] not in (None, ""):
        return True
    code = result.get("exit_code")
    if isinstance(code, int) and code != 0:
        return True
    return result.get("timed_out") is True


# A result whose client-visible output is plain text, not a JSON object: upstream shows an MCP
# tool's rendered content as the raw ``tool_output`` (§5.18). The runner writes the text itself;
# "error" (same text) keeps is_error_result() right for every other consumer.
TEXT_OUTPUT_KEY = "_text_output"


def text_result(text: str, is_error: bool = False) -> dict:
    result = {TEXT_OUTPUT_KEY: text}
    if is_error:
        result["error"] = text
    return result


def text_output(result: Any) -> Optional[str]:
    """The plain-text output of a :func:`text_result`, else None."""
    if isinstance(result, dict):
        text = result.get(TEXT_OUTPUT_KEY)
        if isinstance(text, str):
            return text
    return None
