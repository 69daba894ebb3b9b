"""Partial approval of edit hunks through the real engine (issue 5, item 6)."""

from __future__ import annotations

import json

from test_tools_e2e_support import call, eng, fco, out_obj, outputs, read_file  # noqa: F401

LINES = [f"line {i}\n" for i in range(1, 31)]


def _patch() -> str:
    """Three separate one-line changes (lines 3, 15, 27) as a git-style unified diff."""
    out = ["diff --git a/data.txt b/data.txt\n", "--- a/data.txt\n", "+++ b/data.txt\n"]
    for n in (3, 15, 27):
        lo, hi = max(1, n - 3), min(n + 3, 30)  # 1-based context window around line n
        out.append(f"@@ -{lo},{hi - lo + 1} +{lo},{hi - lo + 1} @@\n")
        for i in range(lo, hi + 1):
            if i == n:
                out.append(f"-line {i}\n")
                out.append(f"+CHANGED {i}\n")
            else:
                out.append(f" line {i}\n")
    return "".join(out)


def _pending(eng, server, calls, prompt="edit"):
    server.script({"tool_calls": calls}, {"text": "finished"})
    m = eng.send({"op": "user_message", "content": prompt})
    req = eng.wait_for("approval_request", start=m)
    return m, req


def _approve_error(eng, op) -> str:
    m = eng.send(dict(op, op="approve"))
    return eng.wait_for("error", start=m)["message"]


def _check_validation(eng, call_id, valid_ids, mark):
    """Every upstream validation error is an error event; the request stays pending."""
    msg = _approve_error(eng, {"call_id": call_id, "decision": "allow", "hunks": ["f9h9"]})
    assert msg == f"unknown hunk id 'f9h9'; valid ids: {', '.join(valid_ids)}"
    msg = _approve_error(eng, {"call_id": call_id, "decision": "allow", "always": True, "hunks": [valid_ids[0]]})
    assert msg.startswith("--hunks cannot be combined with always")
    msg = _approve_error(eng, {"call_id": call_id, "decision": "deny", "hunks": [valid_ids[0]]})
    assert msg.startswith("--hunks requires allow")
    msg = _approve_error(eng, {"call_id": call_id, "decision": "allow", "hunks": []})
    assert msg == "--hunks requires at least one hunk id"
    msg = _approve_error(eng, {"call_id": call_id, "decision": "allow", "hunks": "f0h1"})
    assert msg == "hunks must be an array of hunk id strings"
    assert not eng.since(mark, "tool_output")
    assert not any(e.get("type") == "status" and e.get("message") == "ready" for e in eng.since(mark))


def test_apply_patch_three_hunks_two_approved(eng, server):
    target = eng.cwd / "data.txt"
    target.write_text("".join(LINES))
    m, req = _pending(eng, server, [call("apply_patch", {"patch": _patch()}, "p1")])
    assert req["name"] == "apply_patch"
    hunks = req["hunks"]
    assert [h["id"] for h in hunks] == ["f0h1", "f0h2", "f0h3"]
    for h in hunks:
        assert set(h) == {"id", "file", "header", "lines"}
        assert h["file"] == "data.txt" and h["header"].startswith("@@ ")
    assert "+CHANGED 15" in hunks[1]["lines"] and "-line 15" in hunks[1]["lines"]
    _check_validation(eng, "p1", ["f0h1", "f0h2", "f0h3"], m)

    eng.send({"op": "approve", "call_id": "p1", "decision": "allow", "hunks": ["f0h1", "f0h3"]})
    eng.wait_status("ready", start=m)
    expected = list(LINES)
    expected[2] = "CHANGED 3\n"
    expected[26] = "CHANGED 27\n"
    assert target.read_text() == "".join(expected)

    out = outputs(eng, m)["p1"]
    assert out["is_error"] is False
    res = out_obj(out)
    assert res["applied_hunks"] == ["f0h1", "f0h3"] and res["rejected_hunks"] == ["f0h2"]
    assert res["note"] == "user rejected 1 of 3 hunks; the rejected hunks were NOT applied"
    assert "+++ b/data.txt" in res["diff"] and "CHANGED 15" not in res["diff"]
    model = json.loads(fco(server, "p1")["output"])
    assert model["applied_hunks"] == ["f0h1", "f0h3"] and model["rejected_hunks"] == ["f0h2"]
    assert model["note"] == res["note"]


def test_str_replace_two_edits_one_approved(eng, server):
    target = eng.cwd / "s.py"
    target.write_text("alpha = 1\nbeta = 2\ngamma = 3\n")
    read_file(eng, server, "s.py")
    edits = [{"oldText": "alpha = 1", "newText": "alpha = 10"}, {"oldText": "gamma = 3", "newText": "gamma = 30"}]
    m, req = _pending(eng, server, [call("str_replace", {"path": "s.py", "edits": edits}, "e1")])
    assert [h["id"] for h in req["hunks"]] == ["f0h1", "f0h2"]
    assert all(h["file"] == "s.py" for h in req["hunks"])
    assert "+alpha = 10" in req["hunks"][0]["lines"] and "+gamma = 30" in req["hunks"][1]["lines"]
    _check_validation(eng, "e1", ["f0h1", "f0h2"], m)
    eng.send({"op": "approve", "call_id": "e1", "decision": "allow", "hunks": ["f0h2"]})
    eng.wait_status("ready", start=m)
    assert target.read_text() == "alpha = 1\nbeta = 2\ngamma = 30\n"
    res = out_obj(outputs(eng, m)["e1"])
    assert res["applied_hunks"] == ["f0h2"] and res["rejected_hunks"] == ["f0h1"]
    assert res["note"] == "user rejected 1 of 2 hunks; the rejected hunks were NOT applied"
    assert json.loads(fco(server, "e1")["output"])["applied_hunks"] == ["f0h2"]


def test_hashline_edit_two_edits_both_then_one(eng, server):
    target = eng.cwd / "h.txt"
    target.write_text("one\ntwo\nthree\nfour\nfive\n")
    got = read_file(eng, server, "h.txt")
    anchors = [ln.split(":", 1)[0] for ln in got["hashlines"].splitlines()]
    edits = [{"op": "replace", "pos": anchors[0], "lines": ["ONE"]},
             {"op": "replace", "pos": anchors[4], "lines": ["FIVE"]}]
    m, req = _pending(eng, server, [call("hashline_edit", {"path": "h.txt", "edits": edits}, "h1")])
    assert [h["id"] for h in req["hunks"]] == ["f0h1", "f0h2"]
    _check_validation(eng, "h1", ["f0h1", "f0h2"], m)
    eng.send({"op": "approve", "call_id": "h1", "decision": "allow", "hunks": ["f0h1"]})
    eng.wait_status("ready", start=m)
    assert target.read_text() == "ONE\ntwo\nthree\nfour\nfive\n"
    res = out_obj(outputs(eng, m)["h1"])
    assert res["applied_hunks"] == ["f0h1"] and res["rejected_hunks"] == ["f0h2"]
    assert "+++ b/h.txt" in res["diff"]


def test_hunks_on_call_without_hunk_support(eng, server):
    m, req = _pending(eng, server, [call("bash", {"command": "echo ran-it"}, "b1")])
    assert req["hunks"] is None
    msg = _approve_error(eng, {"call_id": "b1", "decision": "allow", "hunks": ["f0h1"]})
    assert msg == "call b1 does not support hunk selection; use plain allow or deny"
    assert not eng.since(m, "tool_output")
    eng.send({"op": "approve", "call_id": "b1", "decision": "allow"})
    eng.wait_status("ready", start=m)
    out = outputs(eng, m)["b1"]
    assert out["is_error"] is False and "ran-it" in out_obj(out)["stdout"]


def test_write_is_one_hunk_and_slash_approve_hunks(eng, server):
    (eng.cwd / "w.txt").write_text("old\n")
    read_file(eng, server, "w.txt")
    m, req = _pending(eng, server, [call("write", {"path": "w.txt", "content": "new\n"}, "w1")])
    assert [h["id"] for h in req["hunks"]] == ["f0h1"] and req["hunks"][0]["file"] == "w.txt"
    eng.send({"op": "command", "input": "/approve w1 allow --hunks f0h1"})
    eng.wait_status("ready", start=m)
    assert (eng.cwd / "w.txt").read_text() == "new\n"
    res = out_obj(outputs(eng, m)["w1"])
    assert res["applied_hunks"] == ["f0h1"] and res["rejected_hunks"] == [] and "note" not in res
