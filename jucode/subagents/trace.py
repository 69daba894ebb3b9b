"""One agent's work as the front-end sees it: a bounded list of transcript items plus a short
"what is it doing now" string.

Why bounded: a front-end may ask for any agent's transcript at any time, and a chatty child can
run for hundreds of steps. The seed fixes the limits (300 items, 256 KB of text, 4 KB per tool
input/output, output keeping its end); older steps collapse into a single
"… earlier steps trimmed" item right after the task, so the task is always item 0.

Only the main thread touches a trace (the host feeds it the child's unwrapped events).
"""

from __future__ import annotations

from typing import Optional

MAX_ITEMS = 300
MAX_TEXT_BYTES = 256 * 1024
TOOL_TEXT_CAP = 4 * 1024
REASONING_CAP = 2 * 1024
ACTIVITY_CAP = 120
TRIMMED_TEXT = "… earlier steps trimmed"

_TEXT_KEYS = ("content", "input", "output")


def _nbytes(s) -> int:
    return len(s.encode("utf-8", "replace")) if isinstance(s, str) else 0


def cut_head(text: str, cap: int) -> str:
    """Keep the beginning (tool input, reasoning): what was asked matters most."""
    data = text.encode("utf-8", "replace")
    if len(data) <= cap:
        return text
    return data[:cap].decode("utf-8", "ignore") + "…"


def cut_tail(text: str, cap: int) -> str:
    """Keep the end (tool output): errors and summaries are printed last."""
    data = text.encode("utf-8", "replace")
    if len(data) <= cap:
        return text
    return "…" + data[len(data) - cap:].decode("utf-8", "ignore")


def short(text: str, cap: int = ACTIVITY_CAP) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= cap else text[:cap - 1] + "…"


def activity_for_tool(name: str, args: dict) -> str:
    """A few words for the agent_runs row ("Running cargo test", "Reading src/main.rs")."""
    def s(*keys):
        for k in keys:
            v = args.get(k)
            if isinstance(v, str) and v:
                return v
        return ""
    if name in ("bash", "exec_command", "execute", "shell_command"):
        return short(f"Running {s('command', 'cmd')}".rstrip())
    if name == "write_stdin":
        return "Interacting with a running command"
    if name in ("read", "outline"):
        return short(f"Reading {s('path')}".rstrip())
    if name in ("write", "str_replace", "hashline_edit", "edit"):
        return short(f"Editing {s('path')}".rstrip())
    if name == "apply_patch":
        return "Applying a patch"
    if name == "ripgrep":
        return short(f"Searching for {s('pattern')}".rstrip())
    if name == "ls":
        return short(f"Listing {s('path') or '.'}")
    if name == "spawn_agent":
        return short(f"Starting agent {s('task_name')}".rstrip())
    if name == "wait_agent":
        return "Waiting for agents"
    if name.startswith("web_"):
        return short(f"Fetching {s('url', 'query')}".rstrip())
    return short(f"Using {name}")


class AgentTrace:
    """Transcript items of one agent with the seed's limits enforced on every change."""

    def __init__(self, task: str):
        self.items: list[dict] = [{"role": "user", "content": task}]
        self.bytes = _nbytes(task)
        self.trimmed = False
        self.activity = "Starting"
        self._open: Optional[dict] = None          # assistant/reasoning item receiving deltas
        self._tools: dict[str, dict] = {}          # call_id -> running tool item
        self._args: dict[str, str] = {}            # call_id -> raw arguments (from the response)

    # -- feeding ------------------------------------------------------------------------------
    def add_user(self, text: str) -> None:
        self._open = None
        self._append({"role": "user", "content": text})

    def delta(self, role: str, text: str) -> None:
        """Streamed assistant or reasoning text: extends the open item of that role."""
        if not text:
            return
        item = self._open
        if item is None or item["role"] != role or self.items[-1] is not item:
            item = {"role": role, "content": ""}
            self._append(item)
            self._open = item
        if role == "reasoning":
            room = REASONING_CAP - _nbytes(item["content"])
            if room <= 0:
                return
            text = cut_head(text, room)
        item["content"] += text
        self.bytes += _nbytes(text)
        self.activity = "Writing" if role == "assistant" else "Thinking"
        self._enforce()

    def set_activity(self, text: str) -> None:
        self.activity = short(text)

    def remember_args(self, call_id: str, arguments: str) -> None:
        self._args[call_id] = arguments or ""

    def tool_start(self, call_id: str, name: str) -> None:
        self._open = None
        raw = self._args.pop(call_id, "")
        item = {"role": "tool", "call_id": call_id, "name": name, "input": cut_head(raw, TOOL_TEXT_CAP),
                "output": "", "running": True, "is_error": False}
        self._tools[call_id] = item
        self._append(item)
        try:
            import orjson
            args = orjson.loads(raw or "{}")
        except Exception:
            args = {}
        self.activity = activity_for_tool(name, args if isinstance(args, dict) else {})

    def tool_update(self, call_id: str, output: str) -> None:
        item = self._tools.get(call_id)
        if item is not None:
            self._set_output(item, output)

    def tool_output(self, call_id: str, name: str, output: str, is_error: bool) -> None:
        item = self._tools.pop(call_id, None)
        if item is None:                              # refused before it started
            item = {"role": "tool", "call_id": call_id, "name": name, "input": "", "output": "",
                    "running": False, "is_error": False}
            self._append(item)
        item["running"] = False
        item["is_error"] = bool(is_error)
        self._set_output(item, output if isinstance(output, str) else str(output))

    def finish(self, ok: bool) -> None:
        self._open = None
        for item in self._tools.values():
            item["running"] = False
        self._tools.clear()
        self.activity = "Done" if ok else "Failed"

    # -- reading ------------------------------------------------------------------------------
    def snapshot(self) -> list[dict]:
        return [dict(i) for i in self.items]

    # -- limits -------------------------------------------------------------------------------
    def _set_output(self, item: dict, output: str) -> None:
        new = cut_tail(output, TOOL_TEXT_CAP)
        self.bytes += _nbytes(new) - _nbytes(item["output"])
        item["output"] = new
        self._enforce()

    def _append(self, item: dict) -> None:
        self.items.append(item)
        self.bytes += sum(_nbytes(item.get(k)) for k in _TEXT_KEYS)
        self._enforce()

    def _enforce(self) -> None:
        """Drop the oldest steps (never the task, never the newest) into one marker item."""
        if len(self.items) <= MAX_ITEMS and self.bytes <= MAX_TEXT_BYTES:
            return
        if not self.trimmed:
            marker = {"role": "user", "content": TRIMMED_TEXT}
            self.items.insert(1, marker)
            self.bytes += _nbytes(TRIMMED_TEXT)
            self.trimmed = True
        first = 2                                     # task, marker, then steps
        drop = 0
        excess_items = len(self.items) - MAX_ITEMS
        excess_bytes = self.bytes - MAX_TEXT_BYTES
        while first + drop < len(self.items) - 1 and (excess_items > 0 or excess_bytes > 0):
            gone = self.items[first + drop]
            excess_items -= 1
            excess_bytes -= sum(_nbytes(gone.get(k)) for k in _TEXT_KEYS)
            drop += 1
        for gone in self.items[first:first + drop]:
            self.bytes -= sum(_nbytes(gone.get(k)) for k in _TEXT_KEYS)
            if gone is self._open:
                self._open = None
        del self.items[first:first + drop]
