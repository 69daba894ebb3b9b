"""The plan-mode read-only shell parser and the refusal objects."""

import pytest

from jucode.planmode import ALWAYS_ALLOWED, is_read_only_command, plan_mode_refusal

ALLOWED = [
    "git status",
    "git log -p",
    "git log --oneline -n 20",
    "git --no-pager diff HEAD~1",
    "git -C sub status",
    "git -P show HEAD:README.md",
    "git branch -a",
    "git branch --show-current",
    "git branch",
    "git remote -v",
    "git remote",
    "git tag",
    "git tag -l 'v1.*'",
    "git stash list",
    "git reflog",
    "git reflog show main",
    "git grep -n foo",
    "git config --get user.name",
    "git config --list --show-origin",
    "git rev-parse --show-toplevel",
    "ls | grep x",
    "ls -la",
    "cat a.txt | head -n 5",
    "rg -n 'fn main' src",
    "rg --glob '*.py' foo",
    "find . -name '*.py' -type f",
    "sort -u names.txt",
    "tree -L 2",
    "file README.md",
    "wc -l *.py && echo done",
    "cd src; ls",
    "grep -r foo . 2>/dev/null",
    "ls 2>&1 | head",
    "cat x >/dev/null",
    "ls &>/dev/null || true",
    "jq .name package.json",
    "stat -c %s f",
    "du -sh .",
    "cat < input.txt",
    "printf '%s\\n' hi",
    "diff a b",
]

REFUSED = [
    "rm -rf x",
    "echo > f",
    "echo hi >> f",
    "cat a > /tmp/b",
    "echo $(whoami)",
    "echo `id`",
    "cat <(ls)",
    "echo ${HOME}",
    "ls\nrm x",
    "find . -delete",
    "find . -name x -exec rm {} ;",
    "find . -fprintf out %p",
    "find . -fls out",
    "find . -okdir rm {} ;",
    "git push",
    "git commit -m x",
    "git checkout main",
    "git -c core.pager=sh log",
    "git log --output=x",
    "git log --out=x",
    "git diff --ext-diff",
    "git show --textconv HEAD:f",
    "git cat-file --filters HEAD:f",
    "git branch newbranch",
    "git branch -D main",
    "git remote add o url",
    "git tag v1",
    "git stash",
    "git stash pop",
    "git reflog expire --all",
    "git grep -O foo",
    "git grep -nO foo",
    "git config user.name x",
    "git config --unset user.name",
    "git config --get a --add b c",
    "git",
    "sort -o out in",
    "sort --output=out in",
    "sort --outp=out in",
    "sort -uo out in",
    "sort --compress-program=sh in",
    "sed -i s/a/b/ f",
    "rg --pre ./x foo",
    "rg --pre-glob '*' foo",
    "rg --hostname-bin=x foo",
    "tree -o out",
    "tree -R",
    "tree --output=f",
    "file -C -m magic",
    "file --compile",
    "ls & rm x",
    "ls |& cat",
    "FOO=1 ls",
    "/bin/ls",
    "./script.sh",
    "python3 -c 'print(1)'",
    "ls; rm x",
    "ls | xargs rm",
    "cat x | tee y",
    "echo 'a;b'",            # the split is not quote-aware: unbalanced halves are refused
    "",
    "   ",
    "ls >/dev/nullx",
    "ls 2>/dev/null.txt",
    "'r''m' -rf /",
    "\\rm x",
    "(rm x)",
]


@pytest.mark.parametrize("cmd", ALLOWED)
def test_read_only_allowed(cmd):
    assert is_read_only_command(cmd), cmd


@pytest.mark.parametrize("cmd", REFUSED)
def test_read_only_refused(cmd):
    assert not is_read_only_command(cmd), cmd


def test_refusal_shell_text():
    out = plan_mode_refusal("bash", {"command": "rm -rf build"})
    assert out["error"].startswith("plan mode: `rm -rf build` was not run because it is not a known "
                                   "read-only command.")
    assert "propose_plan" in out["error"]
    assert plan_mode_refusal("bash", {"command": "git status"}) is None
    assert plan_mode_refusal("exec_command", {"cmd": "ls -la"}) is None
    assert plan_mode_refusal("exec_command", {"cmd": "touch x"})["error"].startswith("plan mode: `touch x`")
    assert plan_mode_refusal("shell_command", '{"command": "ls"}') is None
    # escalated commands never run in plan mode
    assert plan_mode_refusal("bash", {"command": "ls", "escalate": True}) is not None
    assert plan_mode_refusal("bash", "not json") is not None


def test_refusal_other_tools():
    for name in ("write", "str_replace", "edit", "hashline_edit", "apply_patch", "generate_image",
                 "update_plan", "create_goal", "update_goal", "some_unknown"):
        out = plan_mode_refusal(name, {"path": "x"})
        assert out["error"].startswith(f"plan mode: {name} was not run. You are in plan mode, "), name
        assert "propose_plan" in out["error"]
    for name in ALWAYS_ALLOWED:
        assert plan_mode_refusal(name, {}) is None


def test_refusal_conditional_tools():
    assert plan_mode_refusal("write_stdin", {"session_id": 1}) is None
    assert plan_mode_refusal("write_stdin", {"session_id": 1, "text": ""}) is None
    assert plan_mode_refusal("write_stdin", {"session_id": 1, "text": "y\n"}) is not None
    assert plan_mode_refusal("write_stdin", {"session_id": 1, "chars": "q"}) is not None
    assert plan_mode_refusal("checkpoint", {"action": "list"}) is None
    assert plan_mode_refusal("checkpoint", {"action": "create", "paths": ["a"]}) is not None
    assert plan_mode_refusal("mcp__docs__search", {}, read_only_hint=True) is None
    assert plan_mode_refusal("mcp__docs__search", {}, mcp_read_only=True) is None
    assert plan_mode_refusal("mcp__docs__search", {}) is not None
    assert plan_mode_refusal("mcp__docs__read_resource", {"uri": "x"}) is None
