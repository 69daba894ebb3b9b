"""Session slash commands (/new, /resume, /tree, /checkout, /fork, /delete, /rewind, /transcript,
/compact) and the hook that makes turns compact automatically.

The commands are thin: the tree logic lives in :mod:`.tree`, switching and compaction in
:mod:`jucode.session_host`. This module only validates, refuses what must not happen during a
running response (moving the leaf under a worker would graft its answers onto the wrong
branch), and turns results into the events front-ends render.
"""

from __future__ import annotations

import logging

from ..commands import command

log = logging.getLogger("jucode.session")


class SessionCommandsHost:
    """Hooks for the engine: automatic compaction before a turn's first request, and resume
    summaries once the engine has been idle for a while."""

    def __init__(self, engine):
        from .resume_summary import ResumeSummarizer
        self.engine = engine
        self.resume_summaries = ResumeSummarizer(engine)

    # -- resume summaries (see .resume_summary): armed by activity, started when idle ------------
    def turn_finished(self, turn, error) -> None:
        self.resume_summaries.activity()

    def turn_interrupted(self, turn) -> None:
        self.resume_summaries.activity()

    def session_switched(self) -> None:
        self.resume_summaries.disarm()

    def idle_tick(self) -> bool:
        self.resume_summaries.idle_tick()
        return False                          # background work only: never blocks goal turns

    def tick(self) -> None:
        self.resume_summaries.tick()

    def close(self) -> None:
        self.resume_summaries.disarm()

    def turn_extra(self, extra: dict) -> None:
        engine = self.engine
        try:
            from ..models import context_limit
            limit = context_limit(engine.model_info(), engine.config.data)
            if limit <= 0:
                return
            from .compactor import summarizer_settings
            settings = summarizer_settings(engine)
        except Exception:   # no key / no model info: the turn reports it itself
            log.debug("automatic compaction unavailable", exc_info=True)
            return
        sessions = engine.sessions
        extra["_prepare_input"] = lambda ctx, items: sessions.auto_compact_step(limit, settings, ctx, items)

    def doctor_lines(self) -> list:
        s = self.engine.sessions
        where = s.store.journal_path if s.store is not None else "(not written yet)"
        return [f"session: {s.session_id} · {where}"]


# ---- helpers -------------------------------------------------------------------------------------

def _running(engine) -> bool:
    return engine.turn is not None or engine.sessions.busy()


def _refuse(engine, what: str) -> bool:
    if _running(engine):
        engine.emit({"type": "error", "message": f"cannot {what} while a response is running"})
        return True
    return False


def _error(engine, text: str) -> None:
    engine.emit({"type": "error", "message": text})


def _tree_store(engine):
    """The current store, or an empty unlocked one for read-only answers before the first entry."""
    s = engine.sessions
    if s.store is not None:
        return s.store
    from .journal import SessionStore
    from .paths import sessions_dir
    return SessionStore(sessions_dir(str(engine.profile), engine.cwd), s.session_id, engine.cwd)


def _emit_transcript(engine) -> None:
    store = engine.sessions.store
    engine.emit({"type": "transcript", "items": store.transcript() if store is not None else []})


def _session_switched(engine, status: str) -> None:
    """The events a front-end needs to redraw after /new or /resume."""
    engine.queue.clear()
    for _ in engine.ext._each("session_switched"):    # other hosts (goals) re-read state
        pass
    _emit_transcript(engine)
    engine.emit_pending()
    engine.emit(engine.model_status_event())
    engine.sessions.emit_context_usage()
    engine.emit({"type": "status", "message": status})


def _tree_op(engine, fn):
    """Run a tree command on the store; SessionError → ``error`` with its exact text."""
    from .entry import SessionError
    from .journal import SessionWriteError
    try:
        return fn()
    except SessionWriteError as e:     # the change happened in memory; saving failed
        engine.sessions.report_write_error(e)
        return None
    except SessionError as e:
        _error(engine, str(e))
        return None


# ---- commands ------------------------------------------------------------------------------------

@command("/new", description="Start a new session")
def _new(engine, args: str) -> None:
    if _refuse(engine, "start a new session"):
        return
    sid = engine.sessions.new_session()
    _session_switched(engine, f"new session {sid}")


@command("/resume", args="[session-id]", description="Resume a saved session")
def _resume(engine, args: str) -> None:
    from .entry import SessionError
    from .summary import list_sessions
    sid = args.strip()
    if not sid:
        items = list_sessions(str(engine.profile), engine.cwd, engine.session_id)
        if not items:
            engine.emit({"type": "info", "message": "no sessions for current directory"})
            return
        engine.emit({"type": "resume_view", "items": [s.to_item() for s in items]})
        return
    if _refuse(engine, "resume a session"):
        return
    try:
        store = engine.sessions.resume(sid)
    except SessionError as e:
        _error(engine, str(e))
        return
    except OSError as e:
        _error(engine, f"failed to open session: {e}")
        return
    for warning in store.load_warnings:
        engine.emit({"type": "info", "message": warning})
    if store.model and store.model != engine.model or (store.reasoning_effort or engine.effort) != engine.effort:
        engine.model = store.model or engine.model
        engine.effort = store.reasoning_effort or engine.effort
        engine.on_model_changed()
    _session_switched(engine, f"resumed session {store.id}")


@command("/tree", description="Show the session tree")
def _tree(engine, args: str) -> None:
    store = engine.sessions.store
    engine.emit({"type": "tree_view", "nodes": store.tree_view() if store is not None else []})


@command("/checkout", args="<id>", description="Check out a branch or an earlier message", advanced=True)
def _checkout(engine, args: str) -> None:
    if _refuse(engine, "checkout"):
        return
    store = _tree_store(engine)
    res = _tree_op(engine, lambda: store.checkout(args))
    if res is None:
        return
    _after_move(engine, res)


@command("/fork", args="<id>", description="Label the current point as a new branch", advanced=True)
def _fork(engine, args: str) -> None:
    if _refuse(engine, "fork"):
        return
    label = args.strip()
    store = engine.sessions.ensure_store()     # creating it writes nothing until the entry
    res = _tree_op(engine, lambda: store.fork(label))
    if res is not None:
        engine.emit({"type": "status", "message": res.status})


@command("/delete", args="<id>", description="Delete a branch", advanced=True)
def _delete(engine, args: str) -> None:
    if _refuse(engine, "delete a branch"):
        return
    store = _tree_store(engine)
    res = _tree_op(engine, lambda: store.delete(args))
    if res is None:
        return
    _emit_transcript(engine)
    engine.sessions.emit_context_usage()
    engine.emit({"type": "status", "message": res.status})


@command("/rewind", args="[turn-id]", description="Rewind the conversation and files", aliases=("/undo",))
def _rewind(engine, args: str) -> None:
    target = args.strip()
    store = _tree_store(engine)
    if not target:
        engine.emit({"type": "checkpoint_view", "items": store.rewind_targets()})
        return
    if _refuse(engine, "rewind"):
        return
    res = _tree_op(engine, lambda: store.rewind(target))
    if res is None:
        return
    try:
        from ..tools.checkpoints import restore_to_timestamp
        done = restore_to_timestamp(engine.cwd, res.restore_since)
        engine.emit({"type": "info", "message": f"rewound · restored {len(done['restored'])} file(s), "
                                                f"removed {len(done['removed'])}"})
    except Exception as e:
        _error(engine, f"conversation rewound, but file restore failed: {e}")
    _after_move(engine, res)


def _after_move(engine, res) -> None:
    """After the leaf moved: redraw, offer the message for editing, report."""
    _emit_transcript(engine)
    if res.fill_input is not None:
        engine.emit({"type": "fill_input", "content": res.fill_input})
    engine.sessions.emit_context_usage()
    engine.emit({"type": "status", "message": res.status})


@command("/transcript", description="Show the conversation of the current branch")
def _transcript(engine, args: str) -> None:
    _emit_transcript(engine)


@command("/compact", description="Compact the conversation now")
def _compact(engine, args: str) -> None:
    if _refuse(engine, "compact"):
        return
    engine.sessions.emit_context_usage()
    if engine.sessions.start_compaction():
        engine.emit({"type": "status", "message": "compacting"})
