"""Where the bundled ``jucode serve --demo`` tour lives.

The tour is package data (``jucode/demo/tour.json``) so an installed engine can show a whole
session (streaming, a tool call, an approval, a plan) with no API key and no checkout.
"""

from __future__ import annotations

import os

_TOUR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "demo", "tour.json")


def demo_script_path() -> str:
    """Absolute path of the bundled tour script, played by the replay provider."""
    return _TOUR
