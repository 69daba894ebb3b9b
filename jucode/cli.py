"""Command-line entry: ``jucode serve | --headless | acp | providers | update | --version | --help``.

Kept import-light: ``jucode --version`` and the path to ``hello`` load nothing but the stdlib
and orjson.
"""

from __future__ import annotations

import sys

from . import __version__

HELP = """jucode {v}: a coding-agent engine for editors and scripts

usage:
  jucode serve [--chat] [--demo] [--replay FILE]   JSON-lines protocol on stdin/stdout (protocol 2)
  jucode --headless [PROMPT...] [--full-auto]      one task; JSONL events + final_result (stdin when no PROMPT)
  jucode acp                                       Agent Client Protocol server over stdio
  jucode providers                                 print the built-in providers and models as JSON
  jucode update                                    how to update this install
  jucode --version | version                       print the version
options:
  --approval-mode <manual|plan|auto-edit|auto|full-access>
"""

# Upstream self-updates npm installs only; every other install gets a hint and exit 1. This one
# is a source checkout (bin/install) or a pip install, never npm.
UPDATE_HINT = ("jucode update: this install is not managed by npm; update it from its checkout with "
               "`git pull && bin/install` (or `pip install -U .`)\n")

MODE_ERR = "unknown approval mode '{}': use manual, auto-edit, auto, full-access, or plan"


def _extract_mode(argv: list[str]):
    out, mode = [], None
    it = iter(range(len(argv)))
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--approval-mode":
            if i + 1 >= len(argv):
                sys.stderr.write("--approval-mode requires a value: manual, auto-edit, auto, full-access, or plan\n")
                raise SystemExit(2)
            mode = argv[i + 1]
            i += 2
            continue
        if a.startswith("--approval-mode="):
            mode = a.split("=", 1)[1]
            i += 1
            continue
        out.append(a)
        i += 1
    del it
    if mode is not None:
        from .approvals import ModeError, parse_mode
        try:
            mode = parse_mode(mode)
        except ModeError:
            sys.stderr.write(MODE_ERR.format(mode) + "\n")
            raise SystemExit(2)
    return out, mode


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--version" in argv or "-V" in argv or argv[:1] == ["version"]:
        sys.stdout.write(f"jucode {__version__}\n")
        return 0
    if "--help" in argv or "-h" in argv or argv[:1] == ["help"] or not argv:
        sys.stdout.write(HELP.format(v=__version__))
        return 0
    rest, mode = _extract_mode(argv)
    if mode is not None:
        rest += ["--approval-mode", mode]
    cmd = rest[0] if rest else ""
    if cmd == "serve":
        from .serve import flush_and_exit, serve_main
        # Exit without interpreter teardown: the stdin reader thread may sit in a blocking read,
        # and finalizing the interpreter under it aborts the process.
        flush_and_exit(serve_main(rest[1:]))
    if cmd == "--headless":
        from .headless import headless_main
        return headless_main(rest[1:])
    if cmd == "acp":
        from .acp import acp_main
        return acp_main(rest[1:])
    if cmd == "update":
        sys.stderr.write(UPDATE_HINT)
        return 1
    if cmd == "providers":
        from .llm.catalog import providers_json
        sys.stdout.write(providers_json() + "\n")
        return 0
    sys.stderr.write(f"unknown command: {cmd}\n" + HELP.format(v=__version__))
    return 2
