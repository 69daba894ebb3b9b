"""Shared helpers for the tests/test_tools_*.py files."""

from __future__ import annotations

import json
import os
import threading

from jucode.tools.base import ToolContext
from jucode.tools.registry import lookup, run_tool


def make_ctx(path, **kw) -> ToolContext:
    return ToolContext(cwd=os.path.realpath(str(path)), interrupt=threading.Event(), **kw)


def call(ctx, name, args):
    """Run a builtin through the real registry path (JSON arguments, error wrapping)."""
    raw = args if isinstance(args, str) else json.dumps(args)
    return run_tool(lookup(name), raw, ctx)
