"""Every event type the engine emits, with its fields: the one place that knows their names.

Workers and handlers build events with :func:`event`; the serve writer adds ``session``.
An unknown type or an unexpected field is a programming error, caught here rather than by a
front-end that silently drops the line.
"""

from __future__ import annotations

# type -> the fields it may carry (order is the documented order; all are optional to pass).
EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    "hello": ("protocol", "version"),
    "startup": ("version", "session_id", "profile_dir", "config_path", "cwd", "model", "context_window"),
    "model_status": ("provider", "model", "model_label", "reasoning_effort", "context_window",
                     "context_limit", "max_output_tokens", "reasoning_efforts", "state", "api_key"),
    "command_list": ("commands",),
    "approval_mode": ("mode",),
    "agent_runs": ("workflows", "agents"),
    "plan_draft": ("id", "title", "append"),
    "proposed_plan": ("id", "title", "markdown", "status"),
    "mcp_servers": ("servers",),
    "trust_prompt": ("cwd", "repo_root"),
    "user_message": ("content", "images", "files"),
    "pending_messages": ("messages",),
    "unqueued": ("content", "images", "files"),
    "fill_input": ("content",),
    "connecting": (),
    "thinking_start": (),
    "reasoning_delta": ("delta",),
    "assistant_start": (),
    "assistant_delta": ("delta",),
    "retrying": ("attempt", "max_attempts", "reason", "delay_ms"),
    "tool_start": ("call_id", "name", "arguments", "subagent_id"),
    "tool_update": ("call_id", "name", "output"),
    "tool_output": ("call_id", "name", "output", "is_error"),
    "approval_request": ("call_id", "name", "summary", "subagent_id", "hunks"),
    "action_deferred": ("id", "session_id", "cwd", "call_id", "name", "arguments", "summary",
                        "subagent_id", "digest", "created_at"),
    "action_decided": ("id", "decision", "output", "is_error"),
    "attended": ("attended",),
    "subagent_lifecycle": ("path", "status", "message", "label", "model", "tool_use_id"),
    "subagent_transcript": ("agent_id", "items", "error"),
    "usage": ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens"),
    "context_usage": ("tokens", "tokenizer", "cost"),
    "compaction_start": (),
    "compaction_progress": ("output_tokens",),
    "compaction_end": (),
    "compaction_failed": ("error",),
    "model_view": ("models", "active_effort"),
    "tree_view": ("nodes",),
    "resume_view": ("items",),
    "checkpoint_view": ("items",),
    # /login's picker (upstream's shape; the seed's event table does not list it)
    "login_picker": ("providers",),
    "goal": ("goal",),
    "plan": ("plan",),
    "transcript": ("items",),
    "info": ("message",),
    "error": ("message",),
    "status": ("message",),
    "final_result": ("status", "approval_mode", "denied_approvals", "input_tokens", "cached_input_tokens",
                     "output_tokens", "reasoning_tokens", "context_tokens", "context_tokenizer", "cost",
                     "tool_calls", "subagent_events", "assistant_chars", "elapsed_ms", "last_error",
                     "last_context_state", "event_counts"),
}

EVENT_TYPES = frozenset(EVENT_FIELDS)

# Statuses a front-end treats as "still busy" (front-end notes §4); anything else ends a turn display.
BUSY_STATUSES = frozenset({"streaming", "connecting", "compacting", "steering"})


def event(type_: str, **fields) -> dict:
    """Build one event dict, checking the type and field names against :data:`EVENT_FIELDS`."""
    allowed = EVENT_FIELDS.get(type_)
    if allowed is None:
        raise ValueError(f"unknown event type {type_!r}")
    for key in fields:
        if key not in allowed:
            raise ValueError(f"event {type_!r} has no field {key!r}")
    out = {"type": type_}
    out.update(fields)
    return out


def info(message: str) -> dict:
    return {"type": "info", "message": message}


def error(message: str) -> dict:
    return {"type": "error", "message": message}


def status(message: str) -> dict:
    return {"type": "status", "message": message}
