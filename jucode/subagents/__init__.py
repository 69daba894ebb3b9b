"""Subagents: bounded helper turns the model starts with ``spawn_agent``.

A child is an ordinary turn (``jucode.turn.run_turn``) with its own interrupt flag, mail inbox
and read state, running on the engine's worker pool. Its worker messages are wrapped so the
engine never mistakes them for the parent's; :mod:`jucode.subagents.host` unwraps them on the
main thread, where all agent state lives.

Modules: ``trace`` (the per-agent transcript shown to front-ends), ``records`` (agent state and
the per-turn manager), ``child`` (building and running a child turn, worktrees), ``tools`` (the
five model tools), ``host`` (the engine hooks and ops).
"""
