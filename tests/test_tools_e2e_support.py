"""Shared fixtures and helpers for the tool end-to-end tests (no tests in this module).

The e2e tests drive the real engine subprocess (tests/harness.py) against the scripted model
server (tests/fakeserver.py); these helpers keep each test about the behaviour it checks.
"""

from __future__ import annotations

import json

import pytest

from harness import EngineProc


CONFIG = {"edit_tools": ["write", "str_replace", "hashline_edit", "apply_patch"]}   # every edit tool


@pytest.fixture
def eng(engine):
    return engine(CONFIG)


def full_access(eng: EngineProc) -> None:
    m = eng.send({"op": "set_approval_mode", "mode": "full-access"})
    eng.wait_for(lambda e: e.get("type") == "approval_mode", start=m)


def call(name: str, args, call_id: str) -> dict:
    return {"name": name, "arguments": args, "call_id": call_id}


def run_calls(eng: EngineProc, server, calls: list, text: str = "done", prompt: str = "go",
              timeout: float = 15.0) -> int:
    """One turn: the model makes ``calls`` in one reply, then answers ``text``. Returns the mark."""
    server.script({"tool_calls": calls}, {"text": text})
    m = eng.send({"op": "user_message", "content": prompt})
    eng.wait_status("ready", start=m, timeout=timeout)
    return m


def outputs(eng: EngineProc, mark: int) -> dict:
    """tool_output events since mark by call_id."""
    return {e["call_id"]: e for e in eng.since(mark, "tool_output")}


def out_obj(ev: dict) -> dict:
    """The tool_output's JSON object (every builtin returns exactly one)."""
    obj = json.loads(ev["output"])
    assert isinstance(obj, dict), ev
    return obj


def fco(server, call_id: str, req_index: int = -1) -> dict:
    """The function_call_output item the model got for call_id in a recorded request."""
    for item in server.requests[req_index]["body"]["input"]:
        if item.get("type") == "function_call_output" and item.get("call_id") == call_id:
            return item
    raise AssertionError(f"no function_call_output for {call_id}")


def tool_names(server, req_index: int = -1) -> list:
    return [t.get("name") or (t.get("function") or {}).get("name")
            for t in server.requests[req_index]["body"].get("tools") or []]


def read_file(eng: EngineProc, server, path: str, call_id: str = "r0") -> dict:
    """Read a file through the engine (sets read-before-edit state); returns the result object."""
    m = run_calls(eng, server, [call("read", {"path": path}, call_id)], prompt=f"read {path}")
    return out_obj(outputs(eng, m)[call_id])
