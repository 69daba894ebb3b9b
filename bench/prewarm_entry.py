"""Bench-only entry: ``jucode.py serve`` with ``jucode.models.prewarm`` called after startup.

Why: lets bench_llm.py measure the warm-up before the lead wires it into Engine (it patches
``Engine.emit_startup`` in this process only; nothing in the package changes).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from jucode import engine as _engine  # noqa: E402
from jucode.models import prewarm  # noqa: E402

_orig = _engine.Engine.emit_startup


def _emit_startup(self, *a, **kw):
    r = _orig(self, *a, **kw)
    prewarm(self)
    return r


_engine.Engine.emit_startup = _emit_startup

from jucode.cli import main  # noqa: E402

sys.exit(main())
