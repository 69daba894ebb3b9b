"""Upstream behaviours an audit found missing: the interrupt's event order, a tool call without
call_id, JSON log lines and ``jucode update``. Each runs the real engine (or CLI) as a process."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys

from fakeserver import responses_events
from harness import ENTRY, run_turn


def child(path: str) -> str:
    """The match key of a child's requests: only its own system prompt names it like this."""
    return f"JuCode subagent {path},"


def test_interrupt_reports_before_closing_children(engine, server):
    """Upstream: ``info "request interrupted"``, ``status "interrupted"``, then the children's
    ``subagent_lifecycle closed``."""
    eng = engine({"approval_mode": "full-access"})
    server.script(
        {"tool_calls": [{"name": "spawn_agent", "arguments": {"task_name": "slow", "message": "wait"},
                         "call_id": "sp"},
                        {"name": "wait_agent", "arguments": {}, "call_id": "w"}]},
        {"match": child("/root/slow"), "text": "never seen", "stall": 30},
    )
    m = eng.send({"op": "user_message", "content": "go"})
    eng.wait_for(lambda e: e.get("type") == "subagent_lifecycle" and e["status"] == "running", start=m,
                 timeout=15)
    m2 = eng.send({"op": "interrupt"})
    eng.wait_status("interrupted", start=m2)
    eng.wait_for(lambda e: e.get("type") == "subagent_lifecycle" and e["status"] == "closed", start=m2)
    evs = eng.since(m2)
    kinds = [(e["type"], e["status"] if e["type"] == "subagent_lifecycle" else e["message"]) for e in evs
             if e["type"] in ("info", "status", "subagent_lifecycle")]
    i = kinds.index(("info", "request interrupted"))
    assert kinds[i + 1] == ("status", "interrupted")
    closed = kinds.index(("subagent_lifecycle", "closed"))
    assert closed > i + 1, kinds
    assert [e for e in evs if e["type"] == "subagent_lifecycle"][0]["message"] == "parent interrupted"


def _without_call_id(reply: dict) -> list:
    """The Responses SSE of ``reply`` with every function_call's call_id blanked."""
    events = responses_events(reply)

    def blank(obj):
        if isinstance(obj, dict):
            if obj.get("type") == "function_call":
                obj["call_id"] = ""
            for v in obj.values():
                blank(v)
        elif isinstance(obj, list):
            for v in obj:
                blank(v)
    for _, data in events:
        blank(data)
    return events


def test_tool_call_without_call_id_fails_the_turn(engine, server, tmp_path):
    eng = engine({"approval_mode": "full-access"})
    marker = tmp_path / "work" / "ran"
    server.script({"raw": _without_call_id({"tool_calls": [
        {"name": "bash", "arguments": {"command": f"touch {marker}"}}]})})
    m = eng.send({"op": "user_message", "content": "go"})
    eng.wait_status("ready", start=m)
    types = [t for t in eng.types_since(m) if t != "model_status"]
    errors = eng.since(m, "error")
    assert [e["message"] for e in errors] == ["tool call bash is missing call_id"]
    assert "tool_start" not in types and not marker.exists()
    assert types[types.index("error"):][-1] == "status"
    assert len(server.requests) == 1
    # the journal keeps the orphan call but the next request leaves it out
    server.script({"text": "ok"})
    run_turn(eng, "again")
    assert not [i for i in server.requests[-1]["body"]["input"] if i.get("type") == "function_call"]


TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


def _check_log_line(line: str) -> dict:
    rec = json.loads(line)
    assert isinstance(rec, dict), line
    assert {"ts", "level", "target", "msg"} <= set(rec) <= {"ts", "level", "target", "msg", "fields"}, line
    assert TS.match(rec["ts"]), rec["ts"]
    assert rec["level"] in ("ERROR", "WARN", "INFO", "DEBUG"), rec
    assert isinstance(rec["msg"], str) and rec["target"].startswith("jucode")
    return rec


def test_log_file_lines_are_json_objects(engine, server):
    # a config value with both quote kinds is logged (repr would single-quote it: not JSON)
    eng = engine({"approval_mode": "it's \"bogus\""}, env={"JUCODE_LOG": "debug"})
    server.script({"text": "fine"})
    run_turn(eng, "hello")
    eng.close()
    lines = (eng.profile / "logs" / "jucode.log").read_text().splitlines()
    records = [_check_log_line(line) for line in lines]
    warned = [r for r in records if r["target"] == "jucode.engine" and r["level"] == "WARN"]
    assert warned and warned[0]["msg"].startswith("unknown approval mode 'it's \"bogus\"'")


def test_log_formatter_folds_exceptions_into_a_field(tmp_path):
    """The engine's formatter, in process: a traceback stays inside its one JSON line."""
    from jucode.logjson import JsonLineFormatter
    fmt = JsonLineFormatter()
    try:
        raise ValueError("bad 'value'")
    except ValueError:
        record = logging.getLogger("jucode.test").makeRecord(
            "jucode.test", logging.ERROR, __file__, 1, "tool %s failed", ("bash",), sys.exc_info(),
            extra={"call": "c1"})
    line = fmt.format(record)
    assert "\n" not in line
    rec = _check_log_line(line)
    assert rec["msg"] == "tool bash failed" and rec["level"] == "ERROR"
    assert rec["fields"]["call"] == "c1"
    assert rec["fields"]["exception"].startswith("Traceback") and "bad 'value'" in rec["fields"]["exception"]
    warn = logging.getLogger("jucode.test").makeRecord("jucode.test", logging.WARNING, __file__, 1, "w", (), None)
    assert json.loads(fmt.format(warn))["level"] == "WARN" and "fields" not in json.loads(fmt.format(warn))


def test_update_prints_a_hint_and_exits_1():
    p = subprocess.run([sys.executable, str(ENTRY), "update"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 1
    assert p.stdout == ""
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and "git pull && bin/install" in lines[0] and "unknown command" not in lines[0]
