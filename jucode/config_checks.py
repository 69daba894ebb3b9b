"""Values in config.json the engine cannot use, reported once at startup as upstream words them.

Why a check instead of an error at use: the engine still starts with a safe fallback for each
(manual mode, the default edit tools, the protocol heuristic), but a user who mistyped a value
must hear about it instead of silently getting something else.
"""

from __future__ import annotations


def config_problems(data: dict) -> list:
    """The error texts for ``data`` (config.json's parsed object); [] when everything is usable."""
    from .approvals import ModeError, parse_mode
    from .llm.catalog import PROTOCOLS
    from .tools.registry import validate_edit_tools

    problems = []
    mode = data.get("approval_mode")
    if mode is not None and mode != "":
        try:
            parse_mode(mode)
        except ModeError as exc:
            problems.append(f"invalid approval_mode in config.json: {exc}")
    try:
        validate_edit_tools(data.get("edit_tools"))
    except ValueError as exc:
        problems.append(str(exc))
    protocol = data.get("protocol")
    if protocol is not None and (not isinstance(protocol, str)
                                 or protocol.strip().lower() not in PROTOCOLS + ("",)):
        problems.append(f"invalid protocol in config.json: {_json(protocol)} (want one of {', '.join(PROTOCOLS)})")
    if data.get("encrypt_secrets") is True:
        problems.append("encrypt_secrets is not supported by this engine: auth.json is read and written as "
                        "plain JSON (mode 0600); an encrypted auth.json cannot be read")
    return problems


def _json(value) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)
