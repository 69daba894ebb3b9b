"""Subagents end to end: the real engine subprocess, children on its worker pool, the scripted
model server routing each agent's requests by the path in its system prompt."""

import json
import os
import subprocess
import time

import pytest

from fakeserver import request_input_texts
from harness import pid_alive


def child(path: str) -> str:
    """The match key of a child's requests: only its own system prompt names it like this."""
    return f"JuCode subagent {path},"


def call(name, args, call_id=None):
    c = {"name": name, "arguments": args}
    if call_id:
        c["call_id"] = call_id
    return c


CONFIG = {"edit_tools": ["write", "str_replace"]}


def outputs_of(server, name=None):
    """function_call_output texts of the parent's last request, by call_id."""
    body = server.requests[-1]["body"]
    return {i["call_id"]: i["output"] for i in body.get("input") or [] if i.get("type") == "function_call_output"}


def lifecycle(eng, m, path=None):
    return [(e["path"], e["status"], e["message"]) for e in eng.since(m, "subagent_lifecycle")
            if path is None or e["path"] == path]


def test_two_children_run_concurrently_and_parent_gets_both(server, engine):
    eng = engine(CONFIG)
    server.script(
        {"tool_calls": [call("spawn_agent", {"task_name": "alpha", "message": "Count the alphas"}, "sp_a"),
                        call("spawn_agent", {"task_name": "beta", "message": "Count the betas"}, "sp_b")]},
        {"tool_calls": [call("wait_agent", {"targets": ["/root/alpha"]}, "w1")]},
        {"tool_calls": [call("wait_agent", {"targets": ["beta"]}, "w2")]},
        {"text": "both done"},
        {"match": child("/root/alpha"), "text": "ALPHA-RESULT: 3 alphas", "stall": 1.0,
         "usage": {"input": 1000, "output": 100}},
        {"match": child("/root/beta"), "text": "BETA-RESULT: 5 betas", "stall": 1.0,
         "usage": {"input": 2000, "output": 200}},
    )
    m = eng.send({"op": "user_message", "content": "split the work"})
    eng.wait_status("ready", start=m, timeout=20)
    reqs = server.requests
    kids = {p: [r for r in reqs if child(p) in json.dumps(r["body"])] for p in ("/root/alpha", "/root/beta")}
    assert len(kids["/root/alpha"]) == 1 and len(kids["/root/beta"]) == 1
    ta, tb = kids["/root/alpha"][0]["t"], kids["/root/beta"][0]["t"]
    assert abs(ta - tb) < 0.9, "children did not overlap in time"
    # the child got the task item and the parent's prompt + the subagent block
    body = kids["/root/alpha"][0]["body"]
    assert any('<subagent_task path="/root/alpha">\nCount the alphas\n</subagent_task>' in t
               for t in request_input_texts(kids["/root/alpha"][0]))
    assert "<subagent_context>" in body["instructions"]
    outs = outputs_of(server)
    spawn = json.loads(outs["sp_a"])
    assert spawn == {"task_name": "alpha", "path": "/root/alpha", "status": "running",
                     "workdir": spawn["workdir"]}
    w1, w2 = json.loads(outs["w1"]), json.loads(outs["w2"])
    assert w1["status"]["/root/alpha"] == {"completed": "ALPHA-RESULT: 3 alphas"}
    assert w2["status"]["/root/beta"] == {"completed": "BETA-RESULT: 5 betas"}
    assert w1["timed_out"] is False
    lc = lifecycle(eng, m, "/root/alpha")
    assert [s for _, s, _ in lc] == ["pending", "running", "completed"]
    assert lc[0][2] == "reserved" and lc[1][2] == "started" and lc[2][2] == "finished"
    first = eng.since(m, "subagent_lifecycle")[0]
    assert first["label"] == "alpha" and first["tool_use_id"] == "sp_a" and first["model"] == "gpt-test"
    # the trace is readable after the turn, and agent_runs lists both with every seed field
    m2 = eng.send({"op": "agent_runs"})
    runs = eng.wait_for("agent_runs", start=m2)
    rows = {r["id"]: r for r in runs["agents"]}
    assert set(rows) == {"/root/alpha", "/root/beta"}
    assert set(rows["/root/alpha"]) == {"id", "label", "model", "effort", "state", "started_at", "duration_ms",
                                        "tokens", "tool_calls", "prompt", "result", "error", "type",
                                        "tool_use_id", "activity"}
    assert rows["/root/alpha"]["state"] == "completed" and rows["/root/alpha"]["tokens"] == 1100
    assert rows["/root/alpha"]["type"] == "subagent" and rows["/root/alpha"]["activity"] == "Done"
    m3 = eng.send({"op": "subagent_transcript", "agent_id": "/root/beta"})
    tr = eng.wait_for("subagent_transcript", start=m3)
    assert tr["items"][0] == {"role": "user", "content": "Count the betas"}
    assert tr["items"][-1] == {"role": "assistant", "content": "BETA-RESULT: 5 betas"}
    m4 = eng.send({"op": "subagent_transcript", "agent_id": "/root/nope"})
    bad = eng.wait_for("subagent_transcript", start=m4)
    assert bad["error"] == "unknown agent: /root/nope" and "items" not in bad
    # children's usage folded into the session totals (context_usage after they finished)
    assert not [e for e in eng.since(m, "usage") if e["input_tokens"] in (1000, 2000)]


def test_depth_and_live_limits_error_as_upstream(server, engine):
    eng = engine(CONFIG)
    spawns = [call("spawn_agent", {"task_name": f"k{i}", "message": "wait"}, f"s{i}") for i in range(5)]
    server.script(
        {"tool_calls": spawns + [
            call("spawn_agent", {"task_name": "k0", "message": "dup"}, "dup"),
            call("spawn_agent", {"task_name": "Bad-Name", "message": "x"}, "bad"),
            call("spawn_agent", {"task_name": "", "message": "x"}, "empty"),
            call("spawn_agent", {"task_name": "x" * 65, "message": "x"}, "long"),
            call("spawn_agent", {"task_name": "iso", "message": "x", "isolation": "docker"}, "iso"),
            call("spawn_agent", {"task_name": "fk", "message": "x", "fork_turns": "some"}, "fork"),
            call("spawn_agent", {"task_name": "mdl", "message": "x", "model": "other-model"}, "mdl"),
            call("wait_agent", {"targets": ["k0"], "timeout_ms": 20000}, "pw"),
        ]},
        {"text": "parent done"},
        # k0 spawns a grandchild, which tries to spawn again (depth 3)
        {"match": child("/root/k0"), "tool_calls": [call("spawn_agent", {"task_name": "g", "message": "go deeper"}, "k0s")]},
        {"match": child("/root/k0/g"), "tool_calls": [call("spawn_agent", {"task_name": "h", "message": "deeper"}, "gs")]},
        {"match": child("/root/k0/g"), "text": "grandchild gave up"},
        {"match": child("/root/k0"), "tool_calls": [call("wait_agent", {"targets": ["g"], "timeout_ms": 5000}, "k0w")]},
        {"match": child("/root/k0"), "text": "k0 done"},
        *[{"match": child(f"/root/k{i}"), "text": f"k{i} done", "stall": 0.5} for i in range(1, 4)],
    )
    m = eng.send({"op": "user_message", "content": "go"})
    eng.wait_status("ready", start=m, timeout=20)
    parent_outs = {}
    for r in server.requests:
        for i in r["body"].get("input") or []:
            if i.get("type") == "function_call_output":
                parent_outs[i["call_id"]] = json.loads(i["output"])
    assert parent_outs["s4"] == {"error": "too many live agents (4); wait for or close an agent first"}
    assert parent_outs["dup"] == {"error": "agent already exists: /root/k0"}
    assert parent_outs["bad"] == {"error": "task_name must use lowercase letters, digits, and underscores"}
    assert parent_outs["empty"] == {"error": "task_name is required"}
    assert parent_outs["long"] == {"error": "task_name is too long"}
    assert parent_outs["iso"] == {"error": 'isolation must be "none" or "worktree", got "docker"'}
    assert parent_outs["fork"] == {"error": 'fork_turns must be "all", "none", or a positive integer string'}
    assert parent_outs["mdl"]["error"].startswith('model "other-model" is not allowed for subagents; allowed: ')
    assert parent_outs["k0s"]["path"] == "/root/k0/g"
    assert parent_outs["gs"] == {"error": "agent depth limit reached. Solve the task yourself."}
    assert parent_outs["k0w"]["status"]["/root/k0/g"] == {"completed": "grandchild gave up"}


def test_child_gated_bash_asks_with_its_path(server, engine):
    eng = engine(CONFIG)
    server.script(
        {"tool_calls": [call("spawn_agent", {"task_name": "runner", "message": "run it"}, "sp"),
                        call("wait_agent", {}, "w")]},
        {"text": "parent done"},
        {"match": child("/root/runner"), "tool_calls": [call("bash", {"command": "echo from-child"}, "cb")]},
        {"match": child("/root/runner"), "text": "ran it"},
    )
    m = eng.send({"op": "user_message", "content": "go"})
    req = eng.wait_for("approval_request", start=m, timeout=15)
    assert req["subagent_id"] == "/root/runner" and req["name"] == "bash" and req["summary"] == "echo from-child"
    eng.send({"op": "approve", "call_id": req["call_id"], "decision": "allow"})
    eng.wait_status("ready", start=m, timeout=15)
    child_req = [r for r in server.requests if child("/root/runner") in json.dumps(r["body"])][-1]
    assert any("from-child" in t for t in request_input_texts(child_req))
    assert json.loads(outputs_of(server)["w"])["status"]["/root/runner"] == {"completed": "ran it"}


def _sleepers(marker: str) -> list:
    out = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    return [int(p) for p in out if pid_alive(int(p))]


@pytest.mark.slow
def test_interrupt_closes_children_and_kills_their_processes(server, engine):
    eng = engine({**CONFIG, "approval_mode": "full-access"})
    marker = f"30.{os.getpid()}{int(time.time() * 1000) % 100000}"
    server.script(
        {"tool_calls": [call("spawn_agent", {"task_name": "one", "message": "sleep"}, "s1"),
                        call("spawn_agent", {"task_name": "two", "message": "sleep"}, "s2"),
                        call("wait_agent", {}, "w")]},
        *[{"match": child(p), "tool_calls": [call("bash", {"command": f"sleep {marker}", "timeout": 60})]}
          for p in ("/root/one", "/root/two")],
    )
    eng.send({"op": "user_message", "content": "go"})
    deadline = time.monotonic() + 15
    while len(_sleepers(marker)) < 2:
        assert time.monotonic() < deadline, "children never started their commands"
        time.sleep(0.05)
    m2 = eng.send({"op": "interrupt"})
    eng.wait_status("interrupted", start=m2)
    eng.wait_for(lambda e: e.get("type") == "subagent_lifecycle" and e["path"] == "/root/two"
                 and e["status"] == "closed", start=m2)
    lc = lifecycle(eng, m2)
    assert ("/root/one", "closed", "parent interrupted") in lc and ("/root/two", "closed", "parent interrupted") in lc
    deadline = time.monotonic() + 5
    while _sleepers(marker):
        assert time.monotonic() < deadline, "a child's process survived the interrupt"
        time.sleep(0.05)
    m3 = eng.send({"op": "agent_runs"})
    rows = eng.wait_for("agent_runs", start=m3)["agents"]
    assert {r["state"] for r in rows} == {"closed"}


@pytest.mark.slow
def test_agent_runs_pushes_are_throttled(server, engine):
    eng = engine(CONFIG)
    text = "x" * 120
    server.script(
        {"tool_calls": [call("spawn_agent", {"task_name": "slow", "message": "stream slowly"}, "s"),
                        call("wait_agent", {}, "w")]},
        {"text": "ok"},
        # 60 deltas, 50 ms apart: ~3 s of trace changes
        {"match": child("/root/slow"), "text": text, "chunk": 2, "gap": 0.05},
    )
    m = eng.send({"op": "user_message", "content": "go"})
    eng.wait_status("ready", start=m, timeout=20)
    evs = eng.since(m)
    start = next(i for i, e in enumerate(evs) if e["type"] == "subagent_lifecycle" and e["status"] == "running")
    end = next(i for i, e in enumerate(evs) if e["type"] == "subagent_lifecycle" and e["status"] == "completed")
    pushes = [e for e in evs[start:end] if e["type"] == "agent_runs"]
    assert 3 <= len(pushes) <= 8, len(pushes)
    assert any(r["activity"] == "Writing" for p in pushes for r in p["agents"])
    # a lifecycle change is pushed at once (on the next tick after the completed notice)
    eng.wait_for(lambda e: e.get("type") == "agent_runs" and e["agents"][0]["state"] == "completed",
                 start=m + end, timeout=2)


def _git(cwd, *args):
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True)


def test_worktree_children_edit_same_file_in_their_own_trees(tmp_path, server, engine):
    work = tmp_path / "work"
    work.mkdir()
    _git(work, "init", "-q")
    _git(work, "config", "user.email", "t@example.com")
    _git(work, "config", "user.name", "t")
    (work / "shared.txt").write_text("original\n")
    _git(work, "add", "shared.txt")
    _git(work, "commit", "-q", "-m", "init")
    eng = engine({**CONFIG, "approval_mode": "full-access"})
    script = [
        {"tool_calls": [call("spawn_agent", {"task_name": "left", "message": "edit", "isolation": "worktree"}, "sl"),
                        call("spawn_agent", {"task_name": "right", "message": "edit", "isolation": "worktree"}, "sr"),
                        call("wait_agent", {"targets": ["left"]}, "w1"),
                        call("wait_agent", {"targets": ["right"]}, "w2")]},
        {"text": "merged"},
    ]
    for name in ("left", "right"):
        p = f"/root/{name}"
        script += [
            {"match": child(p), "tool_calls": [call("read", {"path": "shared.txt"})]},
            {"match": child(p), "tool_calls": [call("write", {"path": "shared.txt", "content": f"{name} version\n"}),
                                               call("write", {"path": str(work / "escape.txt"), "content": "x"})]},
            {"match": child(p), "text": f"{name} edited"},
        ]
    server.script(*script)
    m = eng.send({"op": "user_message", "content": "go"})
    eng.wait_status("ready", start=m, timeout=20)
    outs = outputs_of(server)
    dirs = {}
    for cid, name in (("sl", "left"), ("sr", "right")):
        wd = json.loads(outs[cid])["workdir"]
        assert wd.startswith(os.path.realpath(work / ".jucode" / "agents" / f"{name}-"))
        dirs[name] = wd
    for name, wd in dirs.items():
        assert open(os.path.join(wd, "shared.txt")).read() == f"{name} version\n"
    assert (work / "shared.txt").read_text() == "original\n"
    assert not (work / "escape.txt").exists()
    # the escape attempt was refused with an error the child saw
    left_reqs = [r for r in server.requests if child("/root/left") in json.dumps(r["body"])]
    texts = request_input_texts(left_reqs[-1])
    assert any(f"write isolation: write targets {work / 'escape.txt'} outside the workspace. This agent's file "
               f"writes are confined to its workspace {dirs['left']}." in t for t in texts), texts
    w1 = json.loads(outs["w1"])["status"]["/root/left"]
    assert w1 == {"completed": "left edited"}
    m2 = eng.send({"op": "subagent_transcript", "agent_id": "/root/left"})
    items = eng.wait_for("subagent_transcript", start=m2)["items"]
    tools = [i for i in items if i["role"] == "tool"]
    assert tools[0]["name"] == "read" and '"shared.txt"' in tools[0]["input"] and tools[0]["running"] is False


def test_failing_child_errors_with_partial_output_mail_and_close(server, engine):
    eng = engine(CONFIG)
    server.script(
        {"tool_calls": [
            call("spawn_agent", {"task_name": "bad", "message": "overrun", "max_tool_calls": 1}, "sb"),
            call("spawn_agent", {"task_name": "chat", "message": "listen"}, "sc"),
            call("spawn_agent", {"task_name": "sleeper", "message": "sleep"}, "ss"),
            call("send_message", {"target": "chat", "message": "EXTRA-NOTE"}, "msg"),
            call("send_message", {"target": "/root/ghost", "message": "x"}, "ghost"),
            call("wait_agent", {"targets": ["bad"]}, "wb")]},
        {"tool_calls": [call("close_agent", {"target": "sleeper"}, "cl"),
                        call("wait_agent", {"targets": ["chat"]}, "wc"),
                        call("send_message", {"target": "chat", "message": "late"}, "late"),
                        call("list_agents", {}, "la")]},
        {"text": "end"},
        {"match": child("/root/bad"), "text": "partial work so far",
         "tool_calls": [call("ls", {}), call("ls", {})]},
        {"match": child("/root/chat"), "tool_calls": [call("ls", {})], "stall": 0.5},
        {"match": child("/root/chat"), "text": "got mail"},
        {"match": child("/root/sleeper"), "text": "zzz", "stall": 5},
    )
    m = eng.send({"op": "user_message", "content": "go"})
    eng.wait_status("ready", start=m, timeout=20)
    assert not eng.since(m, "error")
    outs = outputs_of(server)
    assert json.loads(outs["wb"])["status"]["/root/bad"] == {
        "errored": "subagent exceeded tool budget (1)", "partial_output": "partial work so far"}
    assert json.loads(outs["msg"]) == {"target": "/root/chat", "delivered": True, "status": "queued"}
    assert json.loads(outs["ghost"]) == {"error": "agent not found: /root/ghost"}
    assert json.loads(outs["cl"]) == {"target": "/root/sleeper", "previous_status": "running", "closed": True}
    assert json.loads(outs["wc"])["status"]["/root/chat"] == {"completed": "got mail"}
    assert json.loads(outs["late"]) == {"error": "agent is not running: /root/chat"}
    rows = {r["task_name"]: r for r in json.loads(outs["la"])["agents"]}
    assert rows["/root/bad"]["status"]["errored"] == "subagent exceeded tool budget (1)"
    assert rows["/root/bad"]["result"]["partial_output"] == "partial work so far"
    assert rows["/root/sleeper"]["status"] == "closed" and rows["/root/sleeper"]["result"] is None
    assert rows["/root/chat"]["depth"] == 1 and rows["/root/chat"]["parent"] == "/root"
    chat_reqs = [r for r in server.requests if child("/root/chat") in json.dumps(r["body"])]
    assert any("<subagent_message>\nEXTRA-NOTE\n</subagent_message>" in t for t in request_input_texts(chat_reqs[-1]))
    lc = lifecycle(eng, m)
    assert ("/root/bad", "errored", "subagent exceeded tool budget (1)") in lc
    assert ("/root/chat", "message", "queued message") in lc
    assert ("/root/sleeper", "closed", "close requested") in lc
    m2 = eng.send({"op": "subagent_transcript", "agent_id": "/root/chat"})
    items = eng.wait_for("subagent_transcript", start=m2)["items"]
    assert {"role": "user", "content": "EXTRA-NOTE"} in items


def test_unattended_child_call_is_deferred_with_its_path(server, engine):
    eng = engine(CONFIG)
    m0 = eng.send({"op": "set_attended", "attended": False})
    eng.wait_for("attended", start=m0)
    server.script(
        {"tool_calls": [call("spawn_agent", {"task_name": "runner", "message": "run it"}, "sp"),
                        call("wait_agent", {}, "w")]},
        {"text": "parent done"},
        {"match": child("/root/runner"), "tool_calls": [call("bash", {"command": "echo deferred-child"}, "cb")]},
        {"match": child("/root/runner"), "text": "asked for it"},
    )
    m = eng.send({"op": "user_message", "content": "go"})
    ev = eng.wait_for("action_deferred", start=m, timeout=15)
    assert ev["subagent_id"] == "/root/runner" and ev["name"] == "bash"
    eng.wait_status("ready", start=m, timeout=15)
    assert not eng.since(m, "approval_request")
    child_req = [r for r in server.requests if child("/root/runner") in json.dumps(r["body"])][-1]
    assert any("submitted for confirmation" in t for t in request_input_texts(child_req))


def test_child_model_effort_and_usage_fold_into_session_cost(server, engine):
    eng = engine({**CONFIG, "models": [
        {"name": "gpt-test"},
        {"name": "kid-model", "input_cost": 1_000_000, "cached_input_cost": 0, "output_cost": 2_000_000,
         "reasoning_efforts": ["low", "high"]}],
        "subagent_models": [{"name": "kid-model", "description": "cheap helper"}]})
    server.script(
        {"tool_calls": [call("spawn_agent", {"task_name": "kid", "message": "help", "model": "kid-model"}, "sp"),
                        call("spawn_agent", {"task_name": "kid2", "message": "help", "model": "kid-model",
                                             "reasoning_effort": "max"}, "bad"),
                        call("wait_agent", {}, "w")]},
        {"text": "parent done"},
        {"match": child("/root/kid"), "text": "kid result", "usage": {"input": 3, "cached": 0, "output": 1}},
    )
    m = eng.send({"op": "user_message", "content": "go"})
    eng.wait_status("ready", start=m, timeout=15)
    kid_req = [r for r in server.requests if child("/root/kid") in json.dumps(r["body"])][0]["body"]
    assert kid_req["model"] == "kid-model" and kid_req["reasoning"]["effort"] == "low"
    spawn_desc = [t for t in server.requests[0]["body"]["tools"] if t["name"] == "spawn_agent"][0]["description"]
    assert "kid-model (reasoning effort: low, high): cheap helper" in spawn_desc
    assert json.loads(outputs_of(server)["bad"])["error"].startswith('reasoning_effort "max" is not supported')
    costs = [e["cost"] for e in eng.since(m, "context_usage")]
    assert costs[-1] == pytest.approx(5.0)          # 3 input at $1/token + 1 output at $2/token
    assert not [e for e in eng.since(m, "usage") if e["input_tokens"] == 3]


def test_turn_end_closes_leftovers_and_earlier_turns_stay_listed(server, engine):
    eng = engine(CONFIG)
    server.script(
        {"tool_calls": [call("spawn_agent", {"task_name": "lazy", "message": "take your time"}, "sp")]},
        {"text": "not waiting"},
        {"match": child("/root/lazy"), "text": "too late", "stall": 5},
    )
    m = eng.send({"op": "user_message", "content": "first"})
    eng.wait_status("ready", start=m, timeout=15)
    assert ("/root/lazy", "closed", "parent turn finished") in lifecycle(eng, m)
    server.script(
        {"tool_calls": [call("spawn_agent", {"task_name": "lazy", "message": "again"}, "sp2"),
                        call("wait_agent", {}, "w")]},
        {"status": 400, "body": {"error": {"message": "bad request", "type": "invalid_request_error"}}},
        {"match": child("/root/lazy"), "text": "second lazy done"},
    )
    m2 = eng.send({"op": "user_message", "content": "second"})
    eng.wait_status("ready", start=m2, timeout=15)
    assert eng.since(m2, "error")
    m3 = eng.send({"op": "agent_runs"})
    rows = eng.wait_for("agent_runs", start=m3)["agents"]
    assert [(r["id"], r["state"]) for r in rows] == [("/root/lazy", "closed"), ("/root/lazy", "completed")]
    m4 = eng.send({"op": "subagent_transcript", "agent_id": "/root/lazy"})
    items = eng.wait_for("subagent_transcript", start=m4)["items"]
    assert items[0]["content"] == "again"           # the newest agent of that path
