"""ripgrep through the real engine, once with rg and once with ``JUCODE_NO_RG=1`` (the switch
reaches the engine subprocess): the front-end and the model see the same result either way."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from test_tools_e2e_support import call, fco, full_access, out_obj, outputs, run_calls

ENGINES = [pytest.param({}, id="rg", marks=pytest.mark.skipif(not shutil.which("rg"), reason="rg not installed")),
           pytest.param({"JUCODE_NO_RG": "1"}, id="fallback")]


@pytest.mark.parametrize("env", ENGINES)
def test_ripgrep_same_through_engine(engine, server, env):
    e = engine(env=env, wait=False)
    try:
        e.wait_startup()
        subprocess.run(["git", "init", "-q", str(e.cwd)], check=True)
        (e.cwd / ".gitignore").write_text("*.log\n")
        (e.cwd / "src").mkdir()
        (e.cwd / "src" / "a.py").write_text("import os\n\ndef needle():\n    return 1\n")
        (e.cwd / "src" / "skip.log").write_text("needle in a log\n")
        (e.cwd / ".secret").write_text("needle hidden\n")
        full_access(e)
        m = run_calls(e, server, [
            call("ripgrep", {"pattern": "NEEDLE", "ignoreCase": True, "contextLines": 1}, "ctx"),
            call("ripgrep", {"pattern": "needle", "glob": "*.log", "path": "src"}, "glob"),
            call("ripgrep", {"pattern": "absent"}, "none"),
        ])
        outs = outputs(e, m)
        assert out_obj(outs["ctx"]) == {
            "pattern": "NEEDLE", "path": ".", "exit_code": 0, "stderr": "", "timed_out": False,
            "truncated": False, "stdout": "./src/a.py-2-\n./src/a.py:3:def needle():\n./src/a.py-4-    return 1\n"}
        assert out_obj(outs["glob"])["stdout"] == "src/skip.log:1:needle in a log\n"
        none = out_obj(outs["none"])
        assert none["stdout"] == "no matches found" and none["exit_code"] == 0 and not outs["none"]["is_error"]
        assert fco(server, "ctx")["output"] == outs["ctx"]["output"]
    finally:
        e.close()
