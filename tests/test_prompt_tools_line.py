"""The system prompt's "Available tools:" line lists what upstream lists: builtins, the web and
image tools when offered, the agent tools; never goal/plan or MCP tools (reference §5.1)."""

import re


def test_available_tools_line(eng, server):
    server.script({"text": "ok"})
    m = eng.send({"op": "user_message", "content": "hi"})
    eng.wait_status("ready", start=m, timeout=20)
    body = server.requests[-1]["body"]
    line = re.search(r"^Available tools: (.*)$", body["instructions"], re.M).group(1).split(", ")
    offered = [t["name"] for t in body["tools"]]
    assert line[:2] == ["read", "hashline_edit"] and "bash" in line and "web_fetch" in line
    assert {"get_goal", "create_goal", "update_goal", "update_plan"} <= set(offered)   # still offered
    assert not {"get_goal", "create_goal", "update_goal", "update_plan", "propose_plan"} & set(line)
    assert not [n for n in line if n.startswith("mcp__")]
    assert set(line) <= set(offered)
    agent_tools = [n for n in offered if n in ("spawn_agent", "wait_agent", "list_agents", "send_message",
                                                 "close_agent")]
    assert [n for n in line if n in agent_tools] == agent_tools
