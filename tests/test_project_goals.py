"""Goal state, /goal, budget accounting, goal tools and update_plan."""

from jucode import goals as g


def test_goal_budget_becomes_budget_limited():
    goal = g.create_goal_tool(None, {"objective": " ship it ", "token_budget": 1000}, now=100).goal
    counter = g.GoalTurnCounter()
    counter.add_usage(input_tokens=900, cached_input_tokens=500, output_tokens=100)   # 500 counted
    assert counter.tokens == 500
    assert g.account_turn(goal, counter.tokens, 2.5, now=110)
    assert goal.status == "active" and goal.tokens_used == 500 and g.wants_continuation(goal)
    assert g.account_turn(goal, 600, 1.0, now=120)
    assert goal.status == "budget_limited" and goal.tokens_used == 1100
    assert not g.wants_continuation(goal)
    assert g.account_turn(goal, 10, 1.0)            # still charged while budget_limited
    assert goal.tokens_used == 1110
    ev = g.goal_event(goal)
    assert ev["type"] == "goal" and ev["goal"]["status"] == "budget_limited"
    assert set(ev["goal"]) == {"objective", "status", "token_budget", "tokens_used", "time_used_seconds",
                               "created_at", "updated_at"}
    assert ev["goal"]["time_used_seconds"] == 4
    goal.status = "paused"
    assert not g.account_turn(goal, 10, 1.0)


def test_goal_command_flow():
    res = g.goal_command(None, "  write docs ")
    goal = res.goal
    assert res.changed and goal.objective == "write docs" and goal.status == "active"
    assert res.events[-1]["goal"]["objective"] == "write docs"
    for word, status in [("pause", "paused"), ("resume", "active"), ("blocked", "blocked"),
                         ("complete", "complete")]:
        res = g.goal_command(goal, word)
        assert res.changed and goal.status == status and res.events[-1]["goal"]["status"] == status
    res = g.goal_command(goal, "")
    assert not res.changed and res.events[0]["type"] == "info"
    res = g.goal_command(goal, "clear")
    assert res.goal is None and res.events[-1] == {"type": "goal", "goal": None}
    assert g.goal_command(None, "pause").events[0]["type"] == "error"


def test_goal_tools():
    assert g.get_goal_tool(None).output == {"goal": None}
    assert g.create_goal_tool(None, {"objective": ""}).output == {"error": g.ERR_OBJECTIVE_EMPTY}
    assert g.create_goal_tool(None, {"objective": "x" * 4001}).output == {"error": g.ERR_OBJECTIVE_LONG}
    made = g.create_goal_tool(None, {"objective": "fix bug"}, now=5)
    goal = made.goal
    assert made.changed and made.output["goal"] == {
        "objective": "fix bug", "status": "active", "tokenBudget": None, "tokensUsed": 0,
        "remainingTokens": None, "timeUsedSeconds": 0, "createdAt": 5, "updatedAt": 5}
    assert g.create_goal_tool(goal, {"objective": "again"}).output == {
        "error": "cannot create a new goal because this session already has a goal"}
    assert g.update_goal_tool(goal, {}).output == {"error": "update_goal requires status"}
    assert g.update_goal_tool(goal, {"status": "paused"}).output == {
        "error": "update_goal can only set status to complete or blocked"}
    done = g.run_goal_tool("update_goal", goal, {"status": "complete"})
    assert done.changed and done.output["goal"]["status"] == "complete"
    assert g.Goal.from_dict(goal.to_dict()) == goal
    assert g.Goal.from_dict(done.output["goal"]).status == "complete"
    text = g.continuation_text(g.Goal("reach 100% coverage", token_budget=50))
    assert text.startswith("<goal_context>") and "reach 100% coverage" in text and "update_goal" in text
    assert g.continuation_info(goal) == "Continuing goal: fix bug"


def test_update_plan():
    out, steps, ev = g.update_plan_tool({"plan": [
        {"step": "read code", "status": "completed"}, {"step": "  ", "status": "pending"},
        {"step": "fix", "status": "doing"}, "test"]})
    assert out == {"ok": True, "steps": 3}
    assert ev == {"type": "plan", "plan": [{"step": "read code", "status": "completed"},
                                           {"step": "fix", "status": "pending"},
                                           {"step": "test", "status": "pending"}]}
    assert g.update_plan_tool({})[0] == {"error": "update_plan requires a plan array"}
