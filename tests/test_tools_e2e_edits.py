"""Edit tools through the real engine: front-end rendering, edit_tools config, read-before-edit
and the workspace boundary (issue 5, items 1-3)."""

from __future__ import annotations

import json
import os

from jucode.tools.hashline import format_hashlines
from test_tools_e2e_support import (call, eng, fco, full_access, out_obj, outputs, run_calls,  # noqa: F401
                                    tool_names)

NOT_READ_EDIT = "edit requires reading this file first so oldText matches bytes on disk"
NOT_READ_HASHLINE = ("hashline_edit requires reading this file first and copying LINE#HASH anchors "
                     "from read().hashlines")
NOT_READ_WRITE = ("write requires reading an existing file first before overwriting it; new files can be "
                  "written without a prior read")
CHANGED = ("file changed on disk since you last read it (another agent, the user, or a command modified "
           "it); read it again and redo the edit against the current content")


def _anchor(text: str, line_no: int) -> str:
    line = text.splitlines(keepends=True)[line_no - 1]
    return format_hashlines([line], line_no).split(":", 1)[0]


def test_edit_tools_render_path_and_diff(eng, server):
    full_access(eng)
    after_replace = "def f():\n    return 2\n"
    patch = ("--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 3\n+    return 4\n")
    calls = [
        call("write", {"path": "pkg/mod.py", "content": "def f():\n    return 1\n"}, "c1"),
        call("str_replace", {"path": "pkg/mod.py", "edits": [{"oldText": "return 1", "newText": "return 2"}]}, "c2"),
        call("hashline_edit", {"path": "pkg/mod.py", "edits": [
            {"op": "replace", "pos": _anchor(after_replace, 2), "lines": ["    return 3"]}]}, "c3"),
        call("apply_patch", {"patch": patch}, "c4"),
    ]
    m = run_calls(eng, server, calls)
    outs = outputs(eng, m)
    assert list(outs) == ["c1", "c2", "c3", "c4"]
    for cid in ("c1", "c2", "c3"):
        res = out_obj(outs[cid])
        assert outs[cid]["is_error"] is False, res
        assert res["path"] == "pkg/mod.py"
        assert "--- a/pkg/mod.py" in res["diff"] and "+++ b/pkg/mod.py" in res["diff"]
    patched = out_obj(outs["c4"])
    assert outs["c4"]["is_error"] is False and patched["exit_code"] == 0
    assert patched["paths"] == ["pkg/mod.py"] and "+++ b/pkg/mod.py" in patched["diff"]
    assert "+    return 4" in patched["diff"]
    assert out_obj(outs["c1"])["created"] is True
    assert "anchors" in out_obj(outs["c3"])
    assert (eng.cwd / "pkg/mod.py").read_text() == "def f():\n    return 4\n"


def test_every_builtin_returns_one_object_and_is_error_rule(eng, server):
    full_access(eng)
    (eng.cwd / "src.py").write_text("class A:\n    def go(self):\n        pass\n")
    calls = [
        call("ls", {"path": "."}, "ls"),
        call("ripgrep", {"pattern": "go", "path": "."}, "rg"),
        call("outline", {"path": "src.py"}, "ol"),
        call("checkpoint", {"action": "list"}, "cp"),
        call("bash", {"command": "echo out; exit 3"}, "b3"),
        call("bash", {"command": "sleep 5", "timeout": 1}, "bt"),
        call("exec_command", {"cmd": "echo quick"}, "ex"),
        call("write_stdin", {"session_id": 999}, "ws"),
        call("read", {"path": "missing.txt"}, "rm"),
        call("web_fetch", {"url": "ftp://example.invalid/"}, "wf"),
    ]
    m = run_calls(eng, server, calls, timeout=20)
    outs = outputs(eng, m)
    assert list(outs) == [c["call_id"] for c in calls]
    objs = {cid: out_obj(ev) for cid, ev in outs.items()}
    for cid, ev in outs.items():
        obj = objs[cid]
        expected = (("error" in obj and obj["error"] not in (None, ""))
                    or (isinstance(obj.get("exit_code"), int) and obj["exit_code"] != 0)
                    or obj.get("timed_out") is True)
        assert ev["is_error"] is expected, (cid, obj)
    assert objs["ls"]["entries"] == ["src.py"] or "src.py" in objs["ls"]["entries"]
    assert objs["ol"]["symbols"][0] == {"line": 1, "symbol": "class A:"}
    assert outs["b3"]["is_error"] is True and objs["b3"]["exit_code"] == 3 and "error" not in objs["b3"]
    assert outs["bt"]["is_error"] is True and objs["bt"]["timed_out"] is True
    assert outs["ex"]["is_error"] is False and objs["ex"]["exit_code"] == 0
    assert outs["ws"]["is_error"] is True and objs["ws"]["session_id"] == 999
    assert objs["ws"]["error"].startswith("no running shell session 999")
    assert outs["rm"]["is_error"] is True and objs["rm"]["path"] == "missing.txt"
    assert outs["wf"]["is_error"] is True
    # the model gets the error flag's source too: the same object (small outputs pass through)
    assert json.loads(fco(server, "b3")["output"])["exit_code"] == 3


def test_default_edit_tools_offer_only_hashline_edit(engine, server):
    e = engine(wait=False)
    try:
        e.wait_startup()
        (e.cwd / "x.txt").write_text("x\n")
        calls = [call("write", {"path": "y.txt", "content": "y"}, "w"),
                 call("edit", {"path": "x.txt", "edits": []}, "ed"),
                 call("apply_patch", {"patch": "x"}, "ap")]
        m = run_calls(e, server, calls)
        names = tool_names(server, 0)
        assert "hashline_edit" in names and "read" in names and "bash" in names
        assert not {"write", "str_replace", "apply_patch", "edit"} & set(names)
        outs = outputs(e, m)
        tail = " is disabled by config (enabled edit tools: hashline_edit). Add it to the edit_tools array " \
               "in config.json to enable it."
        assert out_obj(outs["w"])["error"] == "edit tool 'write'" + tail
        assert out_obj(outs["ed"])["error"] == "edit tool 'edit'" + tail
        assert out_obj(outs["ap"])["error"] == "edit tool 'apply_patch'" + tail
        assert all(ev["is_error"] for ev in outs.values())
        assert not (e.cwd / "y.txt").exists()
    finally:
        e.close()


def test_configured_edit_tools_are_offered(engine, server):
    e = engine({"edit_tools": ["write", "str_replace"]}, wait=False)
    try:
        e.wait_startup()
        m = run_calls(e, server, [call("hashline_edit", {"path": "a", "edits": []}, "h")])
        names = tool_names(server, 0)
        assert "write" in names and "str_replace" in names
        assert "hashline_edit" not in names and "apply_patch" not in names
        assert out_obj(outputs(e, m)["h"])["error"] == (
            "edit tool 'hashline_edit' is disabled by config (enabled edit tools: write, str_replace). "
            "Add it to the edit_tools array in config.json to enable it.")
    finally:
        e.close()


def test_read_before_edit_messages(eng, server):
    full_access(eng)
    for name in ("a.txt", "b.txt", "c.txt", "d.txt"):
        (eng.cwd / name).write_text("hello world\n")
    calls = [
        call("str_replace", {"path": "a.txt", "edits": [{"oldText": "hello", "newText": "bye"}]}, "s1"),
        call("hashline_edit", {"path": "b.txt", "edits": [
            {"op": "replace", "pos": _anchor("hello world\n", 1), "lines": ["x"]}]}, "h1"),
        call("write", {"path": "c.txt", "content": "over"}, "w1"),
        call("write", {"path": "new.txt", "content": "fresh"}, "w2"),
        call("read", {"path": "d.txt"}, "r1"),
        call("bash", {"command": "echo changed > d.txt"}, "b1"),
        call("str_replace", {"path": "d.txt", "edits": [{"oldText": "changed", "newText": "x"}]}, "s2"),
        call("read", {"path": "d.txt"}, "r2"),
        call("str_replace", {"path": "d.txt", "edits": [{"oldText": "changed", "newText": "fixed"}]}, "s3"),
    ]
    m = run_calls(eng, server, calls)
    outs = outputs(eng, m)
    assert out_obj(outs["s1"])["error"] == NOT_READ_EDIT
    assert out_obj(outs["h1"])["error"] == NOT_READ_HASHLINE
    assert out_obj(outs["w1"])["error"] == NOT_READ_WRITE
    assert outs["w2"]["is_error"] is False and (eng.cwd / "new.txt").read_text() == "fresh"
    assert out_obj(outs["s2"])["error"] == CHANGED
    assert outs["s3"]["is_error"] is False
    assert (eng.cwd / "a.txt").read_text() == "hello world\n"
    assert (eng.cwd / "c.txt").read_text() == "hello world\n"
    assert (eng.cwd / "d.txt").read_text() == "fixed\n"
    assert json.loads(fco(server, "s1")["output"])["error"] == NOT_READ_EDIT


def test_workspace_boundary_paths_and_symlinks(eng, server, tmp_path):
    full_access(eng)
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text("secret\n")
    os.symlink(str(secret), str(eng.cwd / "link.txt"))
    os.symlink(str(outside), str(eng.cwd / "linkdir"))
    ws = os.path.realpath(str(eng.cwd))
    tail = f"resolves outside {ws}. File tools only operate on paths inside the workspace."
    calls = [
        call("read", {"path": "../outside/secret.txt"}, "r1"),
        call("read", {"path": "link.txt"}, "r2"),
        call("write", {"path": "linkdir/new.txt", "content": "x"}, "w1"),
        call("write", {"path": str(outside / "abs.txt"), "content": "x"}, "w2"),
        call("str_replace", {"path": "link.txt", "edits": [{"oldText": "secret", "newText": "x"}]}, "s1"),
        call("ls", {"path": "linkdir"}, "l1"),
        call("apply_patch", {"patch": "--- a/../outside/secret.txt\n+++ b/../outside/secret.txt\n"
                                      "@@ -1 +1 @@\n-secret\n+pwned\n"}, "p1"),
    ]
    m = run_calls(eng, server, calls)
    outs = outputs(eng, m)
    for cid, raw in (("r1", "../outside/secret.txt"), ("r2", "link.txt"), ("w1", "linkdir/new.txt"),
                     ("w2", str(outside / "abs.txt")), ("s1", "link.txt"), ("l1", "linkdir")):
        assert outs[cid]["is_error"] is True, cid
        assert out_obj(outs[cid])["error"] == f"path escapes the workspace: {raw} {tail}", cid
    assert outs["p1"]["is_error"] is True and "escapes the workspace" in out_obj(outs["p1"])["error"]
    assert secret.read_text() == "secret\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
