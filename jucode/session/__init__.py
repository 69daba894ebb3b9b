"""Sessions: the journal on disk, the conversation tree, and what the model sees of it.

Main-thread only: the engine owns one :class:`SessionStore`; turn workers never touch it.
"""

from .compaction import (CompactionPlan, apply_compaction, fold_text, plan_compaction,
                         summary_request_input)
from .entry import Entry, SessionError
from .journal import SessionStore, SessionWriteError
from .lock import SessionLockError
from .paths import cwd_hash, new_session_id, sessions_dir
from .projection import request_items, sanitize_tool_pairs
from .stats import ContextStats, context_stats, resume_summary_source
from .summary import SessionSummary, list_sessions
from .tree import TreeResult

__all__ = ["CompactionPlan", "ContextStats", "context_stats", "resume_summary_source", "Entry", "SessionError", "SessionLockError", "SessionStore",
           "SessionSummary", "SessionWriteError", "TreeResult", "apply_compaction", "cwd_hash",
           "fold_text", "list_sessions", "new_session_id", "plan_compaction", "request_items",
           "sanitize_tool_pairs", "sessions_dir", "summary_request_input"]
