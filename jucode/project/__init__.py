"""Project context: everything the engine learns from the filesystem around a session.

Instructions (AGENTS.md/CLAUDE.md), the system prompt, skills, custom commands, hooks, trust
and the file watcher that says when any of them changed. Modules here are pure helpers: they
never emit events themselves; the engine turns their results into protocol events.
"""
