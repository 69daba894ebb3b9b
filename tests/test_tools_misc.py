import http.server
import json
import os
import subprocess
import threading

import pytest

from jucode.tools.checkpoints import restore_to_timestamp
from jucode.tools.hunks import annotate_result, filter_arguments, plan_hunks
from jucode.tools.projection import full_output_path, project_model_output
from jucode.tools.registry import builtin_specs, disabled_edit_tool_error, lookup, summary_for
from test_tools_helpers import call, make_ctx

ORIG = "".join(f"line {i}\n" for i in range(1, 31))
PATCH3 = """--- a/f.txt
+++ b/f.txt
@@ -1,3 +1,3 @@
-line 1
+LINE 1
 line 2
 line 3
@@ -14,3 +14,3 @@
 line 14
-line 15
+LINE 15
 line 16
@@ -28,3 +28,3 @@
 line 28
-line 29
+LINE 29
 line 30
"""


def test_apply_patch_filtered_to_two_hunks(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "f.txt").write_text(ORIG)
    ctx = make_ctx(tmp_path)
    hunks = plan_hunks("apply_patch", {"patch": PATCH3}, ctx.cwd)
    assert [h["id"] for h in hunks] == ["f0h1", "f0h2", "f0h3"]
    assert hunks[1] == {"id": "f0h2", "file": "f.txt", "header": "@@ -14,3 +14,3 @@",
                        "lines": [" line 14", "-line 15", "+LINE 15", " line 16"]}
    args, applied, rejected = filter_arguments("apply_patch", {"patch": PATCH3}, ["f0h1", "f0h3"])
    assert applied == ["f0h1", "f0h3"] and rejected == ["f0h2"]
    res, err = call(ctx, "apply_patch", args)
    assert not err and res["exit_code"] == 0 and res["paths"] == ["f.txt"]
    expected = ORIG.replace("line 1\n", "LINE 1\n", 1).replace("line 29\n", "LINE 29\n")
    assert (tmp_path / "f.txt").read_text() == expected
    assert res["diff"].startswith("--- a/f.txt\n+++ b/f.txt\n")
    res = annotate_result(res, applied, rejected)
    assert res["note"] == "user rejected 1 of 3 hunks; the rejected hunks were NOT applied"
    # the same patch again no longer applies: command-style error
    res, err = call(ctx, "apply_patch", {"patch": PATCH3})
    assert err and res["exit_code"] != 0
    assert call(ctx, "apply_patch", {})[0] == {"error": "missing patch"}
    assert call(ctx, "apply_patch", {"patch": "  \n"})[0] == {"error": "patch must not be empty"}
    res, err = call(ctx, "apply_patch", {"patch": "--- a/../x\n+++ b/../x\n@@ -1 +1 @@\n-a\n+b\n"})
    assert err and res["error"].startswith("path escapes the workspace")


def test_filter_errors_and_edit_hunks(tmp_path):
    (tmp_path / "f.txt").write_text(ORIG)
    with pytest.raises(ValueError, match="no hunks were approved; deny the call instead"):
        filter_arguments("apply_patch", {"patch": PATCH3}, [])
    with pytest.raises(ValueError, match="call has no edits array"):
        filter_arguments("str_replace", {"path": "f.txt"}, ["f0h1"])
    with pytest.raises(ValueError, match="could not split the patch into hunks"):
        filter_arguments("apply_patch", {"patch": "garbage"}, ["f0h1"])
    edits = [{"oldText": "line 3\n", "newText": "x\n"}, {"oldText": "line 20\n", "newText": "y\n"}]
    hunks = plan_hunks("str_replace", {"path": "f.txt", "edits": edits}, str(tmp_path))
    assert [h["id"] for h in hunks] == ["f0h1", "f0h2"] and hunks[1]["header"].startswith("@@ -17,")
    args, applied, rejected = filter_arguments("edit", {"path": "f.txt", "edits": edits}, ["f0h2"])
    assert args["edits"] == edits[1:] and rejected == ["f0h1"]
    assert plan_hunks("str_replace", {"path": "f.txt", "edits": [{"oldText": "line", "newText": "x"}]},
                      str(tmp_path)) is None
    assert [h["id"] for h in plan_hunks("write", {"path": "n.txt", "content": "a\n"}, str(tmp_path))] == ["f0h1"]
    assert plan_hunks("write", {"path": "f.txt", "content": ORIG}, str(tmp_path)) is None


def test_projection_limits(tmp_path):
    cwd = str(tmp_path)
    small = json.dumps({"stdout": "x"})
    assert project_model_output("bash", small, cwd) == small
    big = json.dumps({"stdout": "y" * 40000, "exit_code": 0})
    out = json.loads(project_model_output("bash", big, cwd))
    assert out["model_output_truncated"] is True and "[...model projection omitted" in out["stdout"]
    assert out["full_output_path"] == full_output_path("bash", big, cwd)
    assert open(out["full_output_path"]).read() == big
    assert os.path.basename(out["full_output_path"]).startswith("bash-")
    read = json.dumps({"path": "a", "content": "c" * 2000, "hashlines": "1#ZZ:" + "c" * 2000})
    out = json.loads(project_model_output("read", read, cwd))
    assert "content" not in out and "full_output_path" not in out and out["hashlines"]
    img = json.dumps({"path": "p.png", "kind": "image", "base64": "AAAA"})
    out = json.loads(project_model_output("read", img, cwd))
    assert "base64" not in out and out["note"].startswith("Image content is attached")
    diff = json.dumps({"path": "f", "diff": "--- a/f\n+++ b/f\n@@ -1 +1 @@\n" + "+x\n" * 5000})
    out = json.loads(project_model_output("write", diff, cwd))
    assert out["diff_summary"]["additions"] == 5000 and out["diff_summary"]["files_sample"] == ["f"]
    assert len(json.dumps(out)) <= 16 * 1024


def test_checkpoint_tool_and_rewind(tmp_path):
    ctx = make_ctx(tmp_path)
    (tmp_path / "a.txt").write_text("v1")
    res, err = call(ctx, "checkpoint", {"action": "create", "paths": ["a.txt", "b.txt"]})
    assert not err and res["name"] == "manual" and res["files"] == 2
    assert (tmp_path / ".jucode" / ".gitignore").read_text().strip() == "*"
    (tmp_path / "a.txt").write_text("v2")
    (tmp_path / "b.txt").write_text("new")
    res, err = call(ctx, "checkpoint", {"action": "restore", "id": res["id"]})
    assert not err and (tmp_path / "a.txt").read_text() == "v1" and not (tmp_path / "b.txt").exists()
    assert res["removed"] == ["b.txt"]
    assert call(ctx, "checkpoint", {"action": "create"})[0] == {"error": "checkpoint create requires paths"}
    assert call(ctx, "checkpoint", {"action": "x"})[0] == {
        "error": "checkpoint action must be create, list, or restore"}
    listing = call(ctx, "checkpoint", {"action": "list"})[0]["checkpoints"]
    t = listing[0]["created_at"]
    call(ctx, "read", {"path": "a.txt"})
    call(ctx, "write", {"path": "a.txt", "content": "v3"})
    call(ctx, "write", {"path": "c.txt", "content": "c"})
    restore_to_timestamp(ctx.cwd, t)
    assert (tmp_path / "a.txt").read_text() == "v1" and not (tmp_path / "c.txt").exists()


def test_ls_ripgrep_outline(tmp_path):
    ctx = make_ctx(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text("class A:\n    def f(self):\n        return 'needle'\n")
    (tmp_path / "b.rs").write_text("pub fn main() {}\nstruct S;\n// needle\n")
    assert call(ctx, "ls", {})[0] == {"path": ".", "entries": ["b.rs", "src/"], "truncated": False}
    assert call(ctx, "ls", {"limit": 1})[0]["truncated"] is True
    res, err = call(ctx, "ripgrep", {"pattern": "needle"})
    assert not err and res["exit_code"] == 0
    assert sorted(res["stdout"].splitlines()) == ["./b.rs:3:// needle", "./src/m.py:3:        return 'needle'"]
    res, _ = call(ctx, "ripgrep", {"pattern": "NEEDLE", "ignoreCase": True, "glob": "*.py", "limit": 1})
    assert res["stdout"].startswith("./src/m.py:3:")
    res, _ = call(ctx, "ripgrep", {"pattern": "zzz"})
    assert res["stdout"] == "no matches found" and res["exit_code"] == 0
    assert call(ctx, "ripgrep", {})[0] == {"error": "missing pattern"}
    res, _ = call(ctx, "outline", {"path": "b.rs"})
    assert res["symbols"] == [{"line": 1, "symbol": "pub fn main() {}"}, {"line": 2, "symbol": "struct S;"}]
    assert call(ctx, "outline", {"path": "src/m.py"})[0]["symbols"][0]["symbol"] == "class A:"


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/redir":
            self.send_response(302)
            self.send_header("Location", "/page")
            self.end_headers()
            return
        if self.path == "/missing":
            self.send_response(404)
            self.end_headers()
            self.wfile.write(b"nope")
            return
        body = (b"<html><head><title>T</title><script>x()</script></head><body><nav>menu</nav>"
                b"<p>Hello &amp; bye</p><ul><li><a href='/x'>link</a></li></ul></body></html>")
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def test_web_fetch(tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    ctx = make_ctx(tmp_path)
    try:
        res, err = call(ctx, "web_fetch", {"url": base + "/redir"})
        assert not err and res["url"] == base + "/page" and res["status"] == 200
        assert res["text"] == "T\n\nHello & bye\n- link (/x)"
        res, err = call(ctx, "web_fetch", {"url": base + "/missing"})
        assert err and res["error"].startswith("HTTP 404") and res["body_snippet"] == "nope"
        res, _ = call(ctx, "web_fetch", {"url": base + "/page", "max_bytes": 10})
        assert res["network_truncated"] is True and res["bytes"] == 10
    finally:
        server.shutdown()
    assert call(ctx, "web_fetch", {"url": "ftp://x"})[0] == {"error": "only http:// and https:// URLs are supported"}
    assert call(ctx, "web_fetch", {"url": "http://u:p@h/"})[0] == {
        "error": "URLs with embedded credentials are not supported"}
    assert call(ctx, "web_fetch", {"url": "http://"})[0] == {"error": "URL has no host"}


def test_registry():
    assert [s.name for s in builtin_specs({})] == ["read", "hashline_edit", "bash", "exec_command",
                                                   "write_stdin", "ls", "ripgrep", "outline", "checkpoint",
                                                   "web_fetch"]
    assert "str_replace" not in [s.name for s in builtin_specs({"edit_tools": []})]
    assert lookup("edit").name == "str_replace" and lookup("shell_command").name == "bash"
    assert disabled_edit_tool_error("edit", {"edit_tools": []}) == (
        "edit tool 'edit' is disabled by config (enabled edit tools: none). Add it to the edit_tools array "
        "in config.json to enable it.")
    assert disabled_edit_tool_error("hashline_edit", {}) is None
    assert "hashline_edit" in disabled_edit_tool_error("write", {})
    assert summary_for("bash", {"command": "ls"}) == "ls"
    assert summary_for("exec_command", {"cmd": "top"}) == "top"
    assert summary_for("write_stdin", {"session_id": 1, "text": "q"}) == "q"
    assert summary_for("write", {"path": "a"}) == "a" and summary_for("ls", {}) == ""
    for spec in builtin_specs({"edit_tools": ["edit", "write", "apply_patch", "hashline_edit"]}):
        d = spec.definition()
        assert d["strict"] is False and d["parameters"]["type"] == "object"
