"""ripgrep tool: the real ``rg`` and the pure-Python fallback give the same result for the same
inputs (issue 5 follow-up). Every case runs through both engines against one expectation; the
rg half is skipped only when rg is absent (.ci/install-tools.sh installs it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading

import pytest

from jucode.tools import search
from jucode.tools.base import ToolContext
from jucode.tools.registry import lookup, run_tool

HAVE_RG = shutil.which("rg") is not None
ENGINES = [pytest.param("rg", marks=pytest.mark.skipif(not HAVE_RG, reason="rg not installed")),
           "fallback"]
MANY = "".join(f"x line {i}\n" for i in range(1, 301))


def _tree(root, git: bool) -> str:
    files = {
        "a.txt": "alpha\nbeta x\ngamma\n",
        "sub/b.txt": "x1\r\nfoo\x0cx2\nend",           # CRLF, form feed, no final newline
        "sub/deep/c.log": "x log\n",
        "sub/deep/m.txt": "MiXeD X here\n",
        "sub/.ignore": "dotignored.txt\n",
        "sub/dotignored.txt": "x\n",
        ".hid/h.txt": "x\n",
        ".top.txt": "x top\n",
        "node_modules/n.txt": "x nm\n",
        "build/out.txt": "x built\n",
        "keep.log": "x keep\n",
        "lit.txt": "a.c (x)\nabc x\n",
        "nested/.gitignore": "*.tmp\n",
        "nested/z.tmp": "x tmp\n",
        "nested/y.txt": "x y\n",
        "many.txt": MANY,
        ".gitignore": "*.log\n/build/\n!keep.log\nnode_modules/\n",
    }
    for rel, text in files.items():
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
    with open(os.path.join(root, "sub/bin.dat"), "wb") as fh:
        fh.write(b"x\0bin\n")
    os.symlink("a.txt", os.path.join(root, "link.txt"))
    if git:
        subprocess.run(["git", "init", "-q", root], check=True)
    return os.path.realpath(root)


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    return {"git": _tree(str(tmp_path_factory.mktemp("git")), True),
            "plain": _tree(str(tmp_path_factory.mktemp("plain")), False)}


def run(root: str, engine: str, args: dict, monkeypatch) -> dict:
    monkeypatch.setattr(search, "FORCE_FALLBACK", engine == "fallback")
    ctx = ToolContext(cwd=root, interrupt=threading.Event())
    res, _ = run_tool(lookup("ripgrep"), json.dumps(args), ctx)
    return res


def normalized(res: dict) -> dict:
    """rg's parallel walker prints files in any order: compare per-group, order-free."""
    out = dict(res)
    text = res.get("stdout", "")
    if "\n--\n" in text or text.startswith("--\n"):
        out["stdout"] = sorted(g for g in text.split("--\n"))
    else:
        out["stdout"] = sorted(text.split("\n"))
    return out


def lines_of(res: dict) -> list:
    """Sorted output lines, split on "\\n" only (CR and form feed are line content)."""
    return sorted(res["stdout"].split("\n")[:-1])


BASE = {"exit_code": 0, "stderr": "", "timed_out": False, "truncated": False}
X_MANY = [f"./many.txt:{i}:x line {i}" for i in range(1, 301)]
# (tree, args, expected sorted stdout lines or exact stdout string, extra expected fields)
CASES = {
    "gitignore_hidden_symlink": ("git", {"pattern": "x"}, sorted(
        ["./a.txt:2:beta x", "./sub/b.txt:1:x1\r", "./sub/b.txt:2:foo\x0cx2", "./keep.log:1:x keep",
         "./lit.txt:1:a.c (x)", "./lit.txt:2:abc x", "./nested/y.txt:1:x y"] + X_MANY),
        {"warning": "large ripgrep output without a line limit",
         "suggestion": "pass limit, a narrower path, or a glob"}),
    "no_git_no_gitignore": ("plain", {"pattern": "x", "path": "nested"},
                            ["nested/y.txt:1:x y", "nested/z.tmp:1:x tmp"], {}),
    "dotignore_without_git": ("plain", {"pattern": "x", "path": "sub"},
                              ["sub/b.txt:1:x1\r", "sub/b.txt:2:foo\x0cx2", "sub/deep/c.log:1:x log"], {}),
    "parent_gitignore_applies": ("git", {"pattern": "x", "path": "sub/"},
                                 ["sub/b.txt:1:x1\r", "sub/b.txt:2:foo\x0cx2"], {}),
    "nested_gitignore": ("git", {"pattern": "x", "path": "nested"}, ["nested/y.txt:1:x y"], {}),
    "ignore_case": ("git", {"pattern": "mixed x", "ignoreCase": True}, ["./sub/deep/m.txt:1:MiXeD X here"], {}),
    "case_sensitive": ("git", {"pattern": "mixed x"}, "no matches found", {}),
    "literal": ("git", {"pattern": "a.c (x)", "literal": True}, ["./lit.txt:1:a.c (x)"], {}),
    "regex": ("git", {"pattern": "a.c (x)"}, ["./lit.txt:2:abc x"], {}),
    "context_groups": ("git", {"pattern": "beta|x1|x y", "contextLines": 1}, None, {}),
    "glob_beats_gitignore": ("git", {"pattern": "x", "glob": "*.log"},
                             ["./keep.log:1:x keep", "./sub/deep/c.log:1:x log"], {}),
    "negated_glob_prunes_dir": ("git", {"pattern": "x", "glob": "!sub", "path": "nested"},
                                ["nested/y.txt:1:x y"], {}),
    "anchored_glob_from_cwd": ("git", {"pattern": "x", "glob": "sub/*.txt"},
                               ["./sub/b.txt:1:x1\r", "./sub/b.txt:2:foo\x0cx2", "./sub/dotignored.txt:1:x"], {}),
    "double_star_glob": ("git", {"pattern": "x", "glob": "**/deep/*"}, ["./sub/deep/c.log:1:x log"], {}),
    "explicit_file_ignores_glob": ("git", {"pattern": "x", "glob": "*.md", "path": "a.txt"}, "2:beta x\n", {}),
    "explicit_hidden_dir": ("git", {"pattern": "x", "path": ".hid"}, [".hid/h.txt:1:x"], {}),
    "explicit_binary": ("git", {"pattern": "x", "path": "sub/bin.dat"},
                        'binary file matches (found "\\0" byte around offset 1)\n', {}),
    "crlf_dollar": ("git", {"pattern": "x$", "path": "sub/b.txt"}, "no matches found", {}),
    "no_match": ("git", {"pattern": "zzz_nomatch"}, "no matches found", {}),
    "missing_path": ("git", {"pattern": "x", "path": "nope"}, "",
                     {"exit_code": 2, "stderr": "nope: No such file or directory (os error 2)\n"}),
    "limit_truncates": ("git", {"pattern": "x", "path": "many.txt", "limit": 5},
                        "".join(f"{i}:x line {i}\n" for i in range(1, 6)),
                        {"truncated": True, "warning": "ripgrep output was truncated",
                         "suggestion": "narrow the pattern, path or glob, or raise limit"}),
    "limit_zero": ("git", {"pattern": "x", "path": "many.txt", "limit": 0}, "",
                   {"truncated": True, "warning": "ripgrep output was truncated",
                    "suggestion": "narrow the pattern, path or glob, or raise limit"}),
    "limit_exact_is_not_truncated": ("git", {"pattern": "x", "path": "many.txt", "limit": 300},
                                     [f"{i}:x line {i}" for i in range(1, 301)], {}),
    "large_without_limit": ("git", {"pattern": "x", "path": "many.txt"},
                            [f"{i}:x line {i}" for i in range(1, 301)],
                            {"warning": "large ripgrep output without a line limit",
                             "suggestion": "pass limit, a narrower path, or a glob"}),
    "context_single_file": ("git", {"pattern": "line 1\\b", "path": "many.txt", "contextLines": 2},
                            "1:x line 1\n2-x line 2\n3-x line 3\n", {}),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", list(CASES))
def test_case(trees, engine, case, monkeypatch):
    tree, args, want, extra = CASES[case]
    res = run(trees[tree], engine, args, monkeypatch)
    expected = dict(BASE, pattern=args["pattern"], path=args.get("path", "."), **extra)
    for key, value in expected.items():
        assert res[key] == value, (key, res)
    assert set(res) == set(expected) | {"stdout"}, res
    if isinstance(want, str):
        assert res["stdout"] == want
    elif want is not None:
        assert lines_of(res) == sorted(want), res["stdout"]


@pytest.mark.parametrize("engine", ENGINES)
def test_context_separators(trees, engine, monkeypatch):
    res = run(trees["git"], engine, {"pattern": "beta|x1|x y", "contextLines": 1}, monkeypatch)
    groups = sorted(res["stdout"].split("--\n"))
    assert groups == ["./a.txt-1-alpha\n./a.txt:2:beta x\n./a.txt-3-gamma\n",
                      "./nested/y.txt:1:x y\n",
                      "./sub/b.txt:1:x1\r\n./sub/b.txt-2-foo\x0cx2\n"]


@pytest.mark.parametrize("engine", ENGINES)
def test_bad_regex_is_exit_2(trees, engine, monkeypatch):
    res = run(trees["git"], engine, {"pattern": "(", "path": "a.txt"}, monkeypatch)
    # the message text differs (Rust vs Python regex dialect); the shape does not
    assert res["exit_code"] == 2 and res["stdout"] == "" and res["stderr"].startswith("regex parse error")


@pytest.mark.skipif(not HAVE_RG, reason="rg not installed")
def test_engines_agree_on_every_case(trees, monkeypatch):
    for case, (tree, args, _, _) in CASES.items():
        a = normalized(run(trees[tree], "rg", args, monkeypatch))
        b = normalized(run(trees[tree], "fallback", args, monkeypatch))
        assert a == b, case


def test_env_switch_forces_fallback(trees, monkeypatch):
    monkeypatch.setattr(search, "FORCE_FALLBACK", False)
    monkeypatch.setenv("JUCODE_NO_RG", "1")
    assert search.rg_binary() is None
    monkeypatch.setenv("JUCODE_NO_RG", "0")
    assert search.rg_binary() == shutil.which("rg")


def test_fallback_times_out_like_rg(trees, monkeypatch):
    monkeypatch.setattr(search, "RG_TIMEOUT", -1)
    res = run(trees["git"], "fallback", {"pattern": "x"}, monkeypatch)
    assert res["timed_out"] is True and res["exit_code"] is None and res["warning"] == "ripgrep timed out"
