"""Regression tests for malformed-input crashes found through the engine (in-process, fast)."""

from __future__ import annotations

import json
import os
import threading

import orjson

from jucode.tools import search
from jucode.tools.base import ToolContext, ToolSpec
from jucode.tools.registry import lookup, run_tool


def _ctx(tmp_path) -> ToolContext:
    return ToolContext(cwd=os.path.realpath(str(tmp_path)), interrupt=threading.Event())


def test_write_stdin_session_id_beyond_u64_is_missing(tmp_path):
    for sid in (10 ** 40, -1, 1e300, "99999999999999999999999"):
        res, err = run_tool(lookup("write_stdin"), json.dumps({"session_id": sid}), _ctx(tmp_path))
        assert err and res == {"error": "missing session_id"}, (sid, res)


def test_results_are_always_orjson_serializable(tmp_path):
    spec = ToolSpec(name="echo", description="", parameters={},
                    run=lambda args, ctx: {"n": args["n"], "nested": [{"m": args["n"]}], "ok": 5, "obj": object()})
    res, err = run_tool(spec, json.dumps({"n": 10 ** 40}), _ctx(tmp_path))
    orjson.dumps(res)
    assert res["n"] == str(10 ** 40) and res["nested"] == [{"m": str(10 ** 40)}] and res["ok"] == 5
    assert not err


def test_write_to_absurdly_deep_path_is_an_os_error(tmp_path):
    res, err = run_tool(lookup("write"), json.dumps({"path": "d/" * 3000 + "f.txt", "content": "x"}), _ctx(tmp_path))
    assert err and res["error"].startswith("failed to ") and "File name too long" in res["error"]


def test_write_creates_parent_dirs(tmp_path):
    res, err = run_tool(lookup("write"), json.dumps({"path": "a/b/c/f.txt", "content": "x"}), _ctx(tmp_path))
    assert not err and (tmp_path / "a/b/c/f.txt").read_text() == "x"


def test_ripgrep_fallback_pathological_pattern(tmp_path, monkeypatch):
    (tmp_path / "f.txt").write_text("abc\n")
    monkeypatch.setattr(search.shutil, "which", lambda name: None)
    res, err = run_tool(lookup("ripgrep"), json.dumps({"pattern": "(" * 5000}), _ctx(tmp_path))
    assert err and res["exit_code"] == 2 and res["stderr"].startswith("regex parse error: ")
    res, err = run_tool(lookup("ripgrep"), json.dumps({"pattern": "a(b"}), _ctx(tmp_path))
    assert err and res["stderr"].startswith("regex parse error: ")
