#!/usr/bin/env python3
"""Run jucode from a checkout: ``python jucode.py serve`` (works under ``python -m pdb`` too)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from jucode.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
