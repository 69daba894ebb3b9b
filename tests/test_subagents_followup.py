"""Subagents follow-up (issue 7) end to end: timeout_secs, MCP tools offered to children, and
fork_turns from a child forking the child's own conversation."""

import json
import sys
import time

import pytest

from fakeserver import request_input_texts
from test_mcp_engine import FAULT, server_state
from test_subagents_e2e import call, child, outputs_of


def requests_of(server, path):
    return [r for r in server.requests if child(path) in json.dumps(r["body"])]


@pytest.mark.slow
def test_timed_out_child_errors_and_wait_agent_sees_it(server, engine):
    eng = engine()
    server.script(
        {"tool_calls": [call("spawn_agent", {"task_name": "stuck", "message": "never answers",
                                             "timeout_secs": 10}, "sp"),
                        call("wait_agent", {"targets": ["stuck"], "timeout_ms": 30000}, "w")]},
        {"text": "parent saw the timeout"},
        # a stalled stream: the first delta arrives, then nothing for a minute
        {"match": child("/root/stuck"), "text": "half an answer", "stall": 60},
    )
    m = eng.send({"op": "user_message", "content": "go"})
    t0 = time.monotonic()
    ended = eng.wait_for(lambda e: e.get("type") == "subagent_lifecycle" and e["path"] == "/root/stuck"
                         and e["status"] not in ("pending", "running"), start=m, timeout=20)
    waited = time.monotonic() - t0
    assert (ended["status"], ended["message"]) == ("errored", "subagent timed out")
    assert 9.0 <= waited < 14.0, waited
    eng.wait_status("ready", start=m, timeout=10)
    w = json.loads(outputs_of(server)["w"])
    assert w["timed_out"] is False
    assert w["status"]["/root/stuck"]["errored"] == "subagent timed out"
    m2 = eng.send({"op": "agent_runs"})
    row = eng.wait_for("agent_runs", start=m2)["agents"][0]
    assert row["state"] == "errored" and row["error"] == "subagent timed out"


def test_children_get_mcp_tools_but_not_host_tools(server, engine):
    eng = engine(dict(approval_mode="full-access",
                  mcp_servers=[{"name": "ok", "command": sys.executable, "args": [FAULT, "good"]}]))
    try:
        server_state(eng, "ok", "connected", timeout=15)
    except AssertionError as e:
        raise AssertionError(f"{e}\nerrors: {eng.since(0, 'error')}") from None
    server.script(
        {"tool_calls": [call("spawn_agent", {"task_name": "mcpuser", "message": "echo via mcp"}, "sp"),
                        call("wait_agent", {}, "w")]},
        {"text": "parent done"},
        {"match": child("/root/mcpuser"),
         "tool_calls": [call("mcp__ok__echo", {"text": "CHILD-ECHO"}, "ce")]},
        {"match": child("/root/mcpuser"), "text": "echoed"},
    )
    m = eng.send({"op": "user_message", "content": "go"})
    eng.wait_status("ready", start=m, timeout=20)
    parent_tools = {t["name"] for t in server.requests[0]["body"]["tools"]}
    kid = requests_of(server, "/root/mcpuser")
    kid_tools = {t["name"] for t in kid[0]["body"]["tools"]}
    mcp_tools = {n for n in parent_tools if n.startswith("mcp__ok__")}
    assert "mcp__ok__echo" in mcp_tools and mcp_tools <= kid_tools
    assert not kid_tools & {"get_goal", "create_goal", "update_goal", "update_plan", "propose_plan"}
    assert kid_tools <= parent_tools                      # nothing the root agent lacks
    out = [i for i in kid[-1]["body"]["input"] if i.get("type") == "function_call_output"
           and i["call_id"] == "ce"]
    assert out and "CHILD-ECHO" in out[0]["output"] and "unknown tool" not in out[0]["output"]
    assert json.loads(outputs_of(server)["w"])["status"]["/root/mcpuser"] == {"completed": "echoed"}
    m2 = eng.send({"op": "subagent_transcript", "agent_id": "/root/mcpuser"})
    tools = [i for i in eng.wait_for("subagent_transcript", start=m2)["items"] if i["role"] == "tool"]
    assert tools[0]["name"] == "mcp__ok__echo" and tools[0]["is_error"] is False


def test_fork_turns_from_a_child_forks_its_own_conversation(server, engine):
    eng = engine()
    server.script({"text": "noted"})
    m0 = eng.send({"op": "user_message", "content": "SESSION-ONLY-MARK remember this"})
    eng.wait_status("ready", start=m0, timeout=10)
    server.script(
        {"tool_calls": [call("spawn_agent", {"task_name": "kid", "message": "KID-TASK-MARK investigate"}, "sp"),
                        call("wait_agent", {"targets": ["kid"]}, "w")]},
        {"text": "parent done"},
        {"match": child("/root/kid"), "tool_calls": [call("ls", {}, "kid_ls")]},
        {"match": child("/root/kid"),
         "tool_calls": [call("spawn_agent", {"task_name": "g", "message": "GRAND-TASK", "fork_turns": "all"}, "ks"),
                        call("wait_agent", {"targets": ["g"]}, "kw")]},
        {"match": child("/root/kid/g"), "text": "grandchild result"},
        {"match": child("/root/kid"), "text": "kid result"},
    )
    m = eng.send({"op": "user_message", "content": "ROOT-TURN-MARK split it"})
    eng.wait_status("ready", start=m, timeout=20)
    g = requests_of(server, "/root/kid/g")
    assert len(g) == 1
    texts = request_input_texts(g[0])
    joined = "\n".join(texts)
    # the kid's own conversation: its task, its ls call and output, then the grandchild's task
    assert '<subagent_task path="/root/kid">\nKID-TASK-MARK investigate\n</subagent_task>' in joined
    assert '<subagent_task path="/root/kid/g">\nGRAND-TASK\n</subagent_task>' in joined
    assert "SESSION-ONLY-MARK" not in joined and "ROOT-TURN-MARK" not in joined
    items = g[0]["body"]["input"]
    calls = {i["call_id"] for i in items if i.get("type") == "function_call"}
    outs = {i["call_id"] for i in items if i.get("type") == "function_call_output"}
    assert "kid_ls" in calls and calls == outs           # the spawning batch is not handed down
    kw = [i for i in requests_of(server, "/root/kid")[-1]["body"]["input"]
          if i.get("type") == "function_call_output" and i["call_id"] == "kw"]
    assert json.loads(kw[0]["output"])["status"]["/root/kid/g"] == {"completed": "grandchild result"}
