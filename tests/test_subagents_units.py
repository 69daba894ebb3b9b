"""Unit tests of the subagent pieces that need no engine: trace limits, output cap, naming,
fork selection, worktree preparation."""

import json
import os
import subprocess

import pytest

from jucode.subagents.child import fork_items, prepare_worktree, validate_fork, files_changed
from jucode.subagents.records import (OUTPUT_CAP, AgentRecord, cap_output, check_task_name, depth_of,
                                      resolve_target)
from jucode.subagents.trace import (MAX_ITEMS, MAX_TEXT_BYTES, TOOL_TEXT_CAP, TRIMMED_TEXT, AgentTrace,
                                    activity_for_tool)


def _step(tr: AgentTrace, n: int, out: str = "ok") -> None:
    cid = f"c{n}"
    tr.delta("assistant", f"step {n}")
    tr.remember_args(cid, json.dumps({"command": f"echo {n}"}))
    tr.tool_start(cid, "bash")
    tr.tool_output(cid, "bash", out, False)


def test_400_step_child_is_trimmed_to_300_items_with_one_marker():
    tr = AgentTrace("the task")
    for n in range(400):
        _step(tr, n)
    items = tr.snapshot()
    assert len(items) <= MAX_ITEMS
    assert items[0] == {"role": "user", "content": "the task"}
    assert items[1] == {"role": "user", "content": TRIMMED_TEXT}
    assert sum(1 for i in items if i.get("content") == TRIMMED_TEXT) == 1
    # newest steps kept, in order
    assert items[-1]["role"] == "tool" and items[-1]["call_id"] == "c399"
    assert items[-2] == {"role": "assistant", "content": "step 399"}
    assert "c0" not in [i.get("call_id") for i in items]
    assert tr.activity == "Running echo 399"


def test_text_budget_and_tool_caps():
    tr = AgentTrace("task")
    big = "a" * 10_000 + "THE-END"
    tr.remember_args("c1", "{" + "x" * 9000 + "}")
    tr.tool_start("c1", "read")
    tr.tool_output("c1", "read", big, True)
    item = tr.snapshot()[-1]
    assert item["output"].startswith("…") and item["output"].endswith("THE-END")
    assert len(item["output"].encode()) <= TOOL_TEXT_CAP + 3
    assert len(item["input"].encode()) <= TOOL_TEXT_CAP + 3 and item["input"].startswith("{xxx")
    assert item["is_error"] is True and item["running"] is False
    for n in range(200):                         # ~800 KB of outputs: the 256 KB budget applies
        _step(tr, n, out="y" * 4000)
    total = sum(len(str(i.get(k, "")).encode()) for i in tr.snapshot() for k in ("content", "input", "output"))
    assert total <= MAX_TEXT_BYTES
    assert tr.snapshot()[1]["content"] == TRIMMED_TEXT and tr.snapshot()[0]["content"] == "task"


def test_deltas_merge_and_reasoning_is_capped():
    tr = AgentTrace("t")
    tr.delta("reasoning", "r" * 3000)
    tr.delta("reasoning", "more")
    tr.delta("assistant", "Hel")
    tr.delta("assistant", "lo")
    tr.add_user("mail from parent")
    tr.delta("assistant", "again")
    items = tr.snapshot()
    assert items[1]["role"] == "reasoning" and len(items[1]["content"].encode()) <= 2048 + 3
    assert items[2] == {"role": "assistant", "content": "Hello"}
    assert items[3] == {"role": "user", "content": "mail from parent"}
    assert items[4] == {"role": "assistant", "content": "again"}
    tr.finish(ok=False)
    assert tr.activity == "Failed"


def test_activity_words():
    assert activity_for_tool("bash", {"command": "cargo test"}) == "Running cargo test"
    assert activity_for_tool("read", {"path": "src/main.rs"}) == "Reading src/main.rs"
    assert activity_for_tool("write", {"path": "a.py"}) == "Editing a.py"
    assert activity_for_tool("ripgrep", {"pattern": "TODO"}) == "Searching for TODO"
    assert len(activity_for_tool("bash", {"command": "x" * 500})) <= 120


def test_output_cap_marker():
    assert cap_output("short") == "short"
    text = "z" * (OUTPUT_CAP + 100)
    out = cap_output(text)
    assert out == "z" * OUTPUT_CAP + "\n\n[...subagent output truncated 100 bytes...]"


def test_task_name_rules_and_paths():
    assert check_task_name(None) == "task_name is required"
    assert check_task_name("") == "task_name is required"
    assert check_task_name("a" * 65) == "task_name is too long"
    assert check_task_name("a" * 64) is None
    assert check_task_name("Has-Caps") == "task_name must use lowercase letters, digits, and underscores"
    assert check_task_name("root") == "task_name must use lowercase letters, digits, and underscores"
    assert check_task_name("ok_name_2") is None
    assert depth_of("/root") == 0 and depth_of("/root/a") == 1 and depth_of("/root/a/b") == 2
    assert resolve_target("/root", "a") == "/root/a"
    assert resolve_target("/root/a", "/root/b") == "/root/b"


def test_status_json_shapes():
    r = AgentRecord(key=1, path="/root/a", task_name="a", parent="/root", message="m", model="m1", effort="low",
                    tool_use_id="c", turn_id=1)
    assert r.status_json() == "pending" and r.result_json() is None
    r.state, r.error, r.last_text = "errored", "boom", "half done"
    assert r.status_json() == {"errored": "boom", "partial_output": "half done"}
    r.state, r.summary = "completed", "all done"
    assert r.status_json() == {"completed": "all done"}
    assert r.result_json()["summary"] == "all done"


def test_fork_turns():
    items = [{"role": "user", "content": "u1"}, {"type": "message", "role": "assistant"},
             {"role": "user", "content": "u2"},
             {"type": "function_call", "call_id": "done1"}, {"type": "function_call_output", "call_id": "done1"},
             {"type": "function_call", "call_id": "pending1"}]
    assert fork_items(items, "none") == []
    assert [i.get("call_id") for i in fork_items(items, "all")] == [None, None, None, "done1", "done1"]
    assert fork_items(items, "1")[0] == {"role": "user", "content": "u2"}
    assert fork_items(items, "9")[0] == {"role": "user", "content": "u1"}
    assert validate_fork(None) == "none" and validate_fork("ALL") == "all" and validate_fork("3") == "3"
    for bad in ("0", "-1", "some", 1.5):
        with pytest.raises(ValueError, match='fork_turns must be "all", "none", or a positive integer string'):
            validate_fork(bad)


def test_worktree_in_repo_and_plain_dir(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    g = lambda *a: subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True)  # noqa: E731
    g("init", "-q")
    g("-c", "user.email=t@e", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "init")
    (repo / "f.txt").write_text("base\n")
    g("add", "f.txt")
    g("-c", "user.email=t@e", "-c", "user.name=t", "commit", "-q", "-m", "f")
    wt = prepare_worktree(str(repo), "task")
    assert os.path.dirname(wt) == os.path.realpath(repo / ".jucode" / "agents")
    assert open(os.path.join(wt, "f.txt")).read() == "base\n"
    open(os.path.join(wt, "f.txt"), "w").write("changed\n")
    assert files_changed(wt) == ["f.txt"]
    plain = tmp_path / "plain"
    plain.mkdir()
    d = prepare_worktree(str(plain), "t2")
    assert os.path.isdir(d) and os.listdir(d) == []


# -- the 24-turn archive (SubagentsHost without an engine process) ------------------------------

class _FakeEngine:
    """Just what SubagentsHost touches when turns start and end."""

    def __init__(self):
        self._turn_seq = 0
        self.approvals = {}
        self.events = []

    def emit(self, ev):
        self.events.append(ev)


def _run_turns(host, engine, n, first=0):
    from types import SimpleNamespace
    for t in range(first, first + n):
        engine._turn_seq += 1
        host.turn_extra({})
        rec = AgentRecord(key=1000 + t, path=f"/root/a{t}", task_name=f"a{t}", parent="/root",
                          message=f"task {t}", model="m", effort="low", tool_use_id=f"c{t}",
                          turn_id=engine._turn_seq, state="running")
        host.current.agents[rec.path] = rec
        host._by_key[rec.key] = rec
        host.turn_finished(SimpleNamespace(id=engine._turn_seq), None)


def test_agents_of_24_earlier_turns_stay_listed_and_readable_the_25th_drops():
    from jucode.subagents.host import SubagentsHost
    from jucode.subagents.records import ARCHIVED_TURNS
    assert ARCHIVED_TURNS == 24
    engine = _FakeEngine()
    host = SubagentsHost(engine)
    _run_turns(host, engine, 25)
    ids = [r["id"] for r in host.agent_runs_event()["agents"]]
    assert ids == [f"/root/a{t}" for t in range(1, 25)]            # oldest first, a0 gone
    assert all(r["state"] == "closed" for r in host.agent_runs_event()["agents"])
    assert host.transcript_event("/root/a0") == {"type": "subagent_transcript", "agent_id": "/root/a0",
                                                 "error": "unknown agent: /root/a0"}
    for t in (1, 24):
        ev = host.transcript_event(f"/root/a{t}")
        assert ev["items"][0] == {"role": "user", "content": f"task {t}"}
    assert 1000 not in host._by_key and 1001 in host._by_key        # routing keys pruned with it
    # a turn that spawns nothing archives nothing; the 24 stay
    engine._turn_seq += 1
    host.turn_extra({})
    from types import SimpleNamespace
    host.turn_finished(SimpleNamespace(id=engine._turn_seq), None)
    assert len(host.agent_runs_event()["agents"]) == 24
    _run_turns(host, engine, 1, first=25)
    ids = [r["id"] for r in host.agent_runs_event()["agents"]]
    assert ids[0] == "/root/a2" and ids[-1] == "/root/a25" and len(ids) == 24


def test_idle_tick_is_constant_time_and_pushes_nothing():
    """While idle, tick only compares two counters: no row building, no deadline scan."""
    from jucode.subagents.host import SubagentsHost
    engine = _FakeEngine()
    host = SubagentsHost(engine)
    _run_turns(host, engine, 24)
    host.tick()                                      # flush the pending lifecycle push
    before = len(engine.events)

    def boom():
        raise AssertionError("agent_runs built while idle")
    host.agent_runs_event = boom
    for _ in range(1000):
        host.tick()
    assert len(engine.events) == before and host._timed == []


def test_fork_source_is_the_callers_own_conversation():
    from types import SimpleNamespace
    from jucode.subagents.host import SubagentsHost
    from jucode.subagents.records import Manager
    session_items = [{"role": "user", "content": "session"}]
    engine = SimpleNamespace(sessions=SimpleNamespace(request_items=lambda: list(session_items)))
    host = SubagentsHost(engine)
    mgr = Manager(turn_id=1)
    kid = AgentRecord(key=1, path="/root/kid", task_name="kid", parent="/root", message="m", model="m",
                      effort="", tool_use_id="", turn_id=1, state="running")
    kid.conversation = [{"role": "user", "content": "kid task"}]
    mgr.agents[kid.path] = kid
    assert host._fork_source(mgr, "/root") == session_items
    assert host._fork_source(mgr, "/root/kid") == [{"role": "user", "content": "kid task"}]
    # the child's mirror follows its worker's messages
    host._child_event(kid, {"type": "_response", "items": [{"type": "function_call", "call_id": "x"}],
                            "usage": {}}, "_response")
    host._child_event(kid, {"type": "_tool_result", "item": {"type": "function_call_output", "call_id": "x"},
                            "image_item": None}, "_tool_result")
    assert [i.get("call_id") for i in kid.conversation] == [None, "x", "x"]
