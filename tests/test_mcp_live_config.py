"""MCP follows config.json edited by hand while the engine runs (issue 8 follow-up).

The project watcher reloads ``engine.config``; McpHost notices the version bump on its tick and
touches exactly the servers whose entry changed: added ones connect, removed ones disappear and
their process is killed, ``enabled`` flips toggle, other edits restart, untouched servers keep
their process. Real engine subprocess, real stdio servers (tests/mcp_fault_server.py, and
mcp-server-time when .ci/install-mcp.sh installed it).
"""

import json
import sys

import pytest

from harness import pid_alive, read_pid_file
from test_mcp_engine import FAULT, TIME_SERVER, need_time, server_state
from test_mcp_engine_faults import wait_gone

PY = sys.executable


def entry(name, tmp_path, **extra):
    return {"name": name, "command": PY,
            "args": [FAULT, "good", "--pid-file", str(tmp_path / f"{name}.pids")], **extra}


def _pids(tmp_path, name, count):
    """The pids a server wrote to its own pid file (one line per start), waiting for ``count``."""
    return read_pid_file(tmp_path / f"{name}.pids", count)


def write_servers(eng, servers):
    """Edit config.json on disk the way a user would (keeping every other key)."""
    path = eng.profile / "config.json"
    data = json.loads(path.read_text())
    data["mcp_servers"] = servers
    tmp = path.with_suffix(".edit")
    tmp.write_text(json.dumps(data, indent=2))
    tmp.replace(path)


def names_in(ev):
    return [s["name"] for s in ev["servers"]]


def wait_view(eng, pred, start, what, timeout=20.0):
    return eng.wait_for(lambda e: e.get("type") == "mcp_servers" and pred(e), timeout, start,
                        what=what)


@pytest.fixture
def eng(engine, tmp_path):
    e = engine({"mcp_servers": [entry("keep", tmp_path)]})
    server_state(e, "keep", "connected")
    yield e
    e.close()
    assert e.protocol_bugs() == []


def test_add_toggle_restart_remove_without_restart(eng, tmp_path):
    keep_pid = _pids(tmp_path, "keep", 1)[-1]

    # add: connects without an engine restart, its prompt becomes a command
    m = eng.mark()
    write_servers(eng, [entry("keep", tmp_path), entry("live", tmp_path)])
    live = server_state(eng, "live", "connected", start=m)
    assert {"echo", "fail"} <= {t["name"] for t in live["tools"]}
    eng.wait_for(lambda e: e.get("type") == "command_list" and any(
        c["command"].startswith("/mcp__live__") for c in e["commands"]), 10, m,
        what="command_list with live prompts")
    eng.wait_for(lambda e: e.get("type") == "info"
                 and e["message"].startswith("MCP server live connected ("), 10, m)
    live_pid = _pids(tmp_path, "live", 1)[-1]
    assert pid_alive(live_pid)

    # disable by hand: disabled, its process killed; "keep" untouched
    m = eng.mark()
    write_servers(eng, [entry("keep", tmp_path), entry("live", tmp_path, enabled=False)])
    server_state(eng, "live", "disabled", start=m)
    assert wait_gone([live_pid]) == []
    # re-enable: a fresh process
    m = eng.mark()
    write_servers(eng, [entry("keep", tmp_path), entry("live", tmp_path)])
    server_state(eng, "live", "connected", start=m)
    live_pid = _pids(tmp_path, "live", 2)[-1]

    # any other change restarts just that server
    m = eng.mark()
    write_servers(eng, [entry("keep", tmp_path), entry("live", tmp_path, timeout_seconds=30)])
    server_state(eng, "live", "connected", start=m)
    assert wait_gone([live_pid]) == []
    live_pid = _pids(tmp_path, "live", 3)[-1]

    # remove: gone from the view and from the commands, process killed
    m = eng.mark()
    write_servers(eng, [entry("keep", tmp_path)])
    ev = wait_view(eng, lambda e: names_in(e) == ["keep"], m, "live removed")
    assert ev["servers"][0]["state"] == "connected"
    eng.wait_for(lambda e: e.get("type") == "command_list" and not any(
        c["command"].startswith("/mcp__live__") for c in e["commands"]), 10, m)
    assert wait_gone([live_pid]) == []

    # the untouched server kept its one process all along
    assert _pids(tmp_path, "keep", 1) == [keep_pid] and pid_alive(keep_pid)
    assert not [e for e in eng.since(0, "error")]


def test_invalid_entry_reported_once_and_ops_still_work(eng, tmp_path):
    m = eng.mark()
    bad = {"name": "bad name", "command": "x"}
    write_servers(eng, [entry("keep", tmp_path), bad])
    err = eng.wait_for("error", start=m)
    assert err["message"] == "invalid MCP server name 'bad name': use letters, digits, '_' or '-'"
    # an op that saves config.json (and so reloads it) neither re-reports nor restarts anything
    m = eng.send({"op": "mcp_toggle", "name": "keep", "enabled": False})
    assert eng.wait_for("status", start=m)["message"] == "MCP server keep disabled"
    server_state(eng, "keep", "disabled", start=m)
    m2 = eng.send({"op": "mcp_list"})
    eng.wait_for("mcp_servers", start=m2)
    assert [e["message"] for e in eng.since(m, "error")] == []
    saved = json.loads((eng.profile / "config.json").read_text())["mcp_servers"]
    assert saved[0]["enabled"] is False and saved[1] == bad


@need_time
def test_time_server_added_by_hand(eng, tmp_path):
    m = eng.mark()
    write_servers(eng, [entry("keep", tmp_path),
                        {"name": "time", "command": TIME_SERVER,
                         "args": ["--local-timezone", "UTC"]}])
    time_srv = server_state(eng, "time", "connected", start=m, timeout=30)
    assert {"get_current_time", "convert_time"} <= {t["name"] for t in time_srv["tools"]}
    m = eng.mark()
    write_servers(eng, [])
    wait_view(eng, lambda e: e["servers"] == [], m, "all removed")
    assert wait_gone(_pids(tmp_path, "keep", 1)) == []


def test_apply_config_touches_only_changes(tmp_path):
    """Unit level: an identical list is a no-op (nothing emitted), a reorder only re-emits the
    view, and before start() added servers are marked connecting but not spawned."""
    from jucode.mcp.manager import McpManager

    events = []
    a, b = entry("a", tmp_path), entry("b", tmp_path, enabled=False)
    mgr = McpManager([a, b], str(tmp_path), events.append, connect=False)
    try:
        assert mgr.apply_config([dict(a), dict(b)]) == ([], [])
        assert events == []
        assert mgr.apply_config([b, a]) == ([], [])
        assert [s["name"] for s in events[-2]["servers"]] == ["b", "a"]
        changed, errors = mgr.apply_config([b, a, entry("c", tmp_path), {"name": "x"}])
        assert changed == ["c"] and errors == ["MCP server x: stdio transport requires command"]
        assert [(s["name"], s["state"]) for s in mgr.servers_view()] == [
            ("b", "disabled"), ("a", "connecting"), ("c", "connecting")]
        assert mgr._live == set()                 # nothing spawned before start()
        changed, _ = mgr.apply_config([a])
        assert sorted(changed) == ["b", "c"] and [s["name"] for s in mgr.servers_view()] == ["a"]
    finally:
        mgr.close()
