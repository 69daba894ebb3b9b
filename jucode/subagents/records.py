"""Agent state: one :class:`AgentRecord` per child, grouped by the root turn that spawned it.

All of this lives on the main thread. Workers reach it only through ``call_main`` (the tools)
or by posting wrapped events (the children), so no locks are needed here.

Upstream keeps one manager per turn; a finished turn's manager is archived so its agents stay
listed and readable (24 turns kept).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Optional

from .trace import AgentTrace

MAX_LIVE = 4
MAX_DEPTH = 2
OUTPUT_CAP = 16 * 1024
ARCHIVED_TURNS = 24
TASK_NAME_RE = re.compile(r"^[a-z0-9_]+$")

LIVE_STATES = ("pending", "running")
FINAL_STATES = ("completed", "errored", "interrupted", "closed")


def now_ms() -> int:
    return int(time.time() * 1000)


def cap_output(text: str) -> str:
    """The child's final text as the parent receives it (16 KiB, upstream's marker)."""
    data = text.encode("utf-8", "replace")
    if len(data) <= OUTPUT_CAP:
        return text
    cut = data[:OUTPUT_CAP].decode("utf-8", "ignore")
    return f"{cut}\n\n[...subagent output truncated {len(data) - OUTPUT_CAP} bytes...]"


def depth_of(path: str) -> int:
    """``/root`` is 0, ``/root/a`` is 1, ``/root/a/b`` is 2."""
    return max(0, path.strip("/").count("/"))


@dataclass
class AgentRecord:
    key: int                                   # unique per engine run (routes wrapped events)
    path: str
    task_name: str
    parent: str
    message: str
    model: str
    effort: str
    tool_use_id: str
    turn_id: int                               # the root turn this agent belongs to
    workdir: str = ""
    isolation: str = "none"
    state: str = "pending"
    started_at_ms: int = field(default_factory=now_ms)
    completed_at_ms: Optional[int] = None
    error: Optional[str] = None
    summary: Optional[str] = None              # capped final output (completed)
    last_text: str = ""                        # latest assistant text (partial output on failure)
    tool_calls: int = 0
    tools_used: list = field(default_factory=list)
    usage: dict = field(default_factory=lambda: {"input_tokens": 0, "cached_input_tokens": 0,
                                                 "output_tokens": 0, "reasoning_tokens": 0})
    files_changed: list = field(default_factory=list)
    deadline: Optional[float] = None           # time.monotonic() limit (timeout_secs)
    timed_out: bool = False
    ctx: object = None                         # the child's TurnContext once running
    # The child's own model conversation as its worker builds it (input, responses, tool
    # outputs, mail), mirrored on the main thread from its wrapped events: what a grandchild
    # spawned with fork_turns inherits. Emptied when the agent ends.
    conversation: list = field(default_factory=list)
    trace: AgentTrace = None                   # type: ignore[assignment]

    def __post_init__(self):
        if self.trace is None:
            self.trace = AgentTrace(self.message)

    @property
    def depth(self) -> int:
        return depth_of(self.path)

    @property
    def live(self) -> bool:
        return self.state in LIVE_STATES

    def status_json(self):
        """Upstream's status value: an object for completed/errored, else the plain state."""
        if self.state == "completed":
            return {"completed": self.summary or ""}
        if self.state == "errored":
            return {"errored": self.error or "", "partial_output": cap_output(self.last_text)}
        return self.state

    def elapsed_ms(self) -> int:
        end = self.completed_at_ms if self.completed_at_ms is not None else now_ms()
        return max(0, end - self.started_at_ms)

    def result_json(self) -> Optional[dict]:
        if self.state not in ("completed", "errored"):
            return None
        u = self.usage
        return {"summary": self.summary if self.state == "completed" else None,
                "partial_output": cap_output(self.last_text) if self.state == "errored" else None,
                "tool_calls": self.tool_calls, "tools_used": list(self.tools_used),
                "input_tokens": u["input_tokens"], "cached_input_tokens": u["cached_input_tokens"],
                "output_tokens": u["output_tokens"], "elapsed_ms": self.elapsed_ms(), "model": self.model,
                "workdir": self.workdir, "files_changed": list(self.files_changed)}

    def list_row(self) -> dict:
        return {"task_name": self.path, "name": self.task_name, "parent": self.parent, "depth": self.depth,
                "status": self.status_json(), "model": self.model, "reasoning_effort": self.effort,
                "message": self.message, "started_at_ms": self.started_at_ms,
                "completed_at_ms": self.completed_at_ms, "workdir": self.workdir, "result": self.result_json()}

    def run_row(self) -> dict:
        """One agent_runs row (seed fields)."""
        u = self.usage
        return {"id": self.path, "label": self.task_name, "model": self.model, "effort": self.effort,
                "state": self.state, "started_at": self.started_at_ms, "duration_ms": self.elapsed_ms(),
                "tokens": u["input_tokens"] + u["output_tokens"], "tool_calls": self.tool_calls,
                "prompt": self.message, "result": self.summary if self.state == "completed" else None,
                "error": self.error, "type": "subagent", "tool_use_id": self.tool_use_id,
                "activity": self.trace.activity}


class Manager:
    """The agents of one root turn, in spawn order."""

    def __init__(self, turn_id: int):
        self.turn_id = turn_id
        self.agents: dict[str, AgentRecord] = {}
        self.instructions: Optional[str] = None    # the root turn's system prompt
        self.closed = False                        # the root turn ended

    def live_count(self) -> int:
        return sum(1 for a in self.agents.values() if a.live)

    def children_of(self, path: str) -> list[AgentRecord]:
        return [a for a in self.agents.values() if a.parent == path]

    def descendants_of(self, path: str) -> list[AgentRecord]:
        prefix = path.rstrip("/") + "/"
        return [a for a in self.agents.values() if a.path.startswith(prefix)]


def check_task_name(name) -> Optional[str]:
    """Upstream's task_name errors, or None when the name is fine."""
    if not isinstance(name, str) or not name.strip():
        return "task_name is required"
    if len(name) > 64:
        return "task_name is too long"
    if not TASK_NAME_RE.match(name) or name == "root":
        return "task_name must use lowercase letters, digits, and underscores"
    return None


def resolve_target(caller_path: str, target: str) -> str:
    """Targets are absolute paths, or a child's task name relative to the caller."""
    target = target.strip()
    if target.startswith("/"):
        return target.rstrip("/") or "/"
    return f"{caller_path.rstrip('/')}/{target}"
