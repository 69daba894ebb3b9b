"""Instructions, prompt, skills, custom commands and trust against real directories and git."""

import datetime as dt
import json
import os
import subprocess

import pytest

from jucode.project import custom_commands as cc
from jucode.project import instructions as ins
from jucode.project import prompt as pr
from jucode.project import skills as sk
from jucode.project import trust as tr


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / "pkg" / "sub").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


@pytest.fixture
def profile(tmp_path):
    p = tmp_path / "profile"
    p.mkdir()
    return str(p)


@pytest.fixture
def home(tmp_path):
    h = tmp_path / "home"
    h.mkdir()
    return str(h)


# ---------------------------------------------------------------- instructions

def test_instructions_from_git_root_down_to_cwd(repo, tmp_path):
    write(str(tmp_path / "AGENTS.md"), "outside the repo")        # above the git root: ignored
    write(str(repo / "AGENTS.md"), "root agents")
    write(str(repo / "CLAUDE.md"), "root claude")
    write(str(repo / "pkg" / "AGENTS.md"), "pkg agents")
    write(str(repo / "pkg" / "sub" / "CLAUDE.md"), "sub claude")
    cwd = str(repo / "pkg" / "sub")
    assert ins.find_git_root(cwd) == str(repo)
    files = ins.discover_instructions(cwd)
    assert [os.path.relpath(f.path, repo) for f in files] == [
        "AGENTS.md", "CLAUDE.md", os.path.join("pkg", "AGENTS.md"), os.path.join("pkg", "sub", "CLAUDE.md")]
    assert [f.content for f in files] == ["root agents", "root claude", "pkg agents", "sub claude"]


def test_instructions_without_git_start_at_topmost_file(tmp_path):
    base = tmp_path / "plain"
    (base / "a" / "b").mkdir(parents=True)
    write(str(base / "a" / "AGENTS.md"), "a")
    write(str(base / "a" / "b" / "AGENTS.md"), "b")
    dirs = ins.instruction_dirs(str(base / "a" / "b"))
    assert dirs == [str(base / "a"), str(base / "a" / "b")]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert ins.instruction_dirs(str(empty)) == [str(empty)]


def test_instructions_budget_truncates_with_suffix(repo):
    write(str(repo / "AGENTS.md"), "x" * 40_000)
    write(str(repo / "pkg" / "AGENTS.md"), "é" * 20_000)            # 40 000 bytes, does not fit
    write(str(repo / "pkg" / "sub" / "AGENTS.md"), "never read")
    files = ins.discover_instructions(str(repo / "pkg" / "sub"))
    assert len(files) == 2
    assert not files[0].truncated and files[1].truncated
    assert files[1].content.endswith(ins.TRUNCATION_SUFFIX)
    body = files[1].content[: -len(ins.TRUNCATION_SUFFIX)]
    assert len(body.encode()) + 40_000 <= ins.INSTRUCTIONS_BUDGET
    assert len(body.encode()) >= ins.INSTRUCTIONS_BUDGET - 40_000 - 1
    assert set(body) == {"é"}


# ---------------------------------------------------------------- prompt

def test_system_prompt_sections(repo):
    write(str(repo / "AGENTS.md"), "use tabs & <stuff>")
    files = ins.discover_instructions(str(repo))
    skill = sk.Skill("fmt & lint", "Format <code>", "/s/fmt/SKILL.md", "/s/fmt", "user")
    now = dt.datetime(2025, 3, 4, tzinfo=dt.timezone.utc)
    text = pr.build_system_prompt("  Base prompt.  \n", str(repo), ["read", "bash"], files, [skill],
                                  plan_mode=True, edit_tools=["str_replace"], now=now)
    assert text.startswith("Base prompt.\n\n<runtime_context>\n")
    assert "Current date: 2025-03-04 UTC" in text
    assert f"Current working directory: {repo}" in text
    assert "Available tools: read, bash" in text
    assert "str_replace" in text
    assert f'<project_instructions path="{repo}/AGENTS.md">\nuse tabs & <stuff>\n</project_instructions>' in text
    assert ("<skill><name>fmt &amp; lint</name><description>Format &lt;code&gt;</description>"
            "<location>/s/fmt/SKILL.md</location></skill>") in text
    assert text.index("<project_context>") < text.index("<available_skills>") < text.index("<plan_mode>")


def test_chat_prompt_has_no_project_or_plan(repo, profile):
    files = [ins.InstructionFile("/x/AGENTS.md", "secret project rules")]
    text = pr.build_system_prompt("coding base", str(repo), ["web_search"], files, [], chat=True, plan_mode=True)
    assert "coding base" not in text and "secret project rules" not in text
    assert "<plan_mode>" not in text and "web_fetch" in text
    chats = os.path.join(profile, "chats")
    os.makedirs(os.path.join(chats, "c1"))
    assert pr.is_chat_cwd(profile, chats) and pr.is_chat_cwd(profile, os.path.join(chats, "c1"))
    assert not pr.is_chat_cwd(profile, profile) and not pr.is_chat_cwd(profile, chats + "x")


def test_base_prompt_file_created_once(profile):
    assert pr.load_base_prompt(profile) == pr.DEFAULT_BASE_PROMPT
    write(os.path.join(profile, "prompt.txt"), "custom")
    assert pr.load_base_prompt(profile) == "custom"


# ---------------------------------------------------------------- skills

SKILL_MD = """---
name: {name}
description: {desc}
---
# Heading

Body text.
"""


def test_skill_discovery_trust_and_state(profile, home, repo):
    write(os.path.join(profile, "skills", "group", "alpha", "SKILL.md"), SKILL_MD.format(name="alpha", desc="Alpha skill"))
    write(os.path.join(profile, "skills", "group", "alpha", "nested", "SKILL.md"), SKILL_MD.format(name="hidden", desc="x"))
    write(os.path.join(home, ".agents", "skills", "beta", "SKILL.md"), "\n# Beta does things\nmore\n")
    write(os.path.join(home, ".agents", "skills", "nodesc", "SKILL.md"), "---\nname: nodesc\n---\n\n")
    write(str(repo / ".jucode" / "skills" / "gamma" / "SKILL.md"), SKILL_MD.format(name="Gamma Tool", desc='"Quoted: yes"'))
    cwd = str(repo)
    untrusted = sk.discover_skills(profile, cwd, trusted=False, home=home)
    assert [s.name for s in untrusted] == ["alpha", "beta"]
    assert untrusted[1].description == "Beta does things"
    trusted = sk.discover_skills(profile, cwd, trusted=True, home=home)
    assert [s.name for s in trusted] == ["Gamma Tool", "alpha", "beta"]
    assert trusted[0].description == "Quoted: yes" and trusted[0].source == "project"
    assert [s.name for s in sk.discover_skills(profile, cwd, trusted=True, chat=True, home=home)] == ["alpha", "beta"]

    sk.set_skill_enabled(profile, "alpha", False)
    assert [s.name for s in sk.discover_skills(profile, cwd, False, home=home)] == ["beta"]
    every = sk.discover_skills(profile, cwd, False, home=home, include_disabled=True)
    assert [(s.name, s.enabled) for s in every] == [("alpha", False), ("beta", True)]
    sk.set_skill_enabled(profile, "alpha", True)
    assert len(sk.discover_skills(profile, cwd, False, home=home)) == 2

    rows = sk.skill_command_entries(trusted)
    assert rows[0] == {"command": "/gamma-tool", "marker": "SKILL", "args": "", "description": "Quoted: yes"}
    gamma = sk.find_skill(trusted, "gamma-tool")
    assert gamma is sk.find_skill(trusted, "Gamma Tool")
    msg = sk.skill_message(gamma, "  do it ")
    assert msg.startswith("Use the following skill instructions for this request.\n\n"
                          f'<skill name="Gamma Tool" path="{gamma.path}">\n---\nname: Gamma Tool')
    assert msg.endswith("Body text.\n</skill>\n\nUser request:\ndo it")
    assert sk.skill_message(gamma, "").endswith("</skill>")
    assert gamma.dir in sk.skill_read_roots(trusted)


# ---------------------------------------------------------------- custom commands

def test_custom_commands_discovery_and_expansion(profile, repo):
    cwd = str(repo)
    write(os.path.join(profile, "commands", "Review Code.md"), "---\ndescription: Review the diff\n---\nReview: $ARGUMENTS!\n")
    write(os.path.join(profile, "commands", "notes.txt"), "ignored")
    write(str(repo / ".jucode" / "commands" / "review-code.md"), "project version\n")
    write(str(repo / ".jucode" / "commands" / "deploy.md"), "\n\n" + "D" * 120 + "\nsecond line\n")
    assert [c.name for c in cc.discover_custom_commands(profile, cwd, trusted=False)] == ["review-code"]
    cmds = cc.discover_custom_commands(profile, cwd, trusted=True)
    assert [(c.name, c.marker) for c in cmds] == [("deploy", "PROJ"), ("review-code", "CMD")]
    deploy, review = cmds
    assert deploy.description == "D" * 96
    assert review.description == "Review the diff"
    assert cc.expand_command(review, " main..HEAD ") == "Review: main..HEAD!"
    assert cc.expand_command(deploy, "prod") == "D" * 120 + "\nsecond line\n\nprod"
    assert cc.expand_command(deploy, "") == "D" * 120 + "\nsecond line"
    rows = cc.custom_command_entries(cmds, taken=["/deploy"])
    assert rows == [{"command": "/review-code", "marker": "CMD", "args": "[args]", "description": "Review the diff"}]
    os.remove(deploy.path)
    with pytest.raises(cc.CustomCommandError) as err:
        cc.expand_command(deploy, "")
    assert str(err.value).startswith(f"failed to read command file {deploy.path}: ")


# ---------------------------------------------------------------- trust

def test_trust_decisions_and_prompt(profile, repo):
    sub = repo / "pkg"
    cwd = str(sub)
    assert tr.is_trusted(profile, cwd) and tr.trust_prompt(profile, cwd) is None   # no local resources
    (sub / ".jucode" / "commands").mkdir(parents=True)
    assert tr.has_local_resources(cwd)
    assert not tr.is_trusted(profile, cwd)
    assert tr.trust_prompt(profile, cwd) == {"cwd": os.path.realpath(cwd), "repo_root": os.path.realpath(repo)}

    out = tr.trust_command(profile, cwd, "no")
    assert (out.kind, out.message, out.changed) == ("status", f"untrusted {os.path.realpath(cwd)}", True)
    assert not tr.is_trusted(profile, cwd) and tr.trust_prompt(profile, cwd) is None

    out = tr.trust_command(profile, cwd, "repo")
    assert out.message == f"trusted {os.path.realpath(repo)}"
    # nearest ancestor wins: the explicit "no" on pkg still applies there, the repo decision elsewhere
    assert not tr.is_trusted(profile, cwd)
    assert tr.is_trusted(profile, str(repo / "other"))
    assert not tr.is_trusted(profile, str(sub / "deeper"))
    assert tr.trust_decision(profile, str(sub / "deeper")) == (os.path.realpath(cwd), False)

    out = tr.trust_command(profile, cwd, "yes")
    assert out.message == f"trusted {os.path.realpath(cwd)}" and tr.is_trusted(profile, cwd)
    with open(os.path.join(profile, "trust.json"), encoding="utf-8") as fh:
        raw = fh.read()
    assert raw.endswith("\n") and json.loads(raw)["projects"][os.path.realpath(cwd)] is True
    assert tr.trust_command(profile, cwd, "").kind == "info"
    assert tr.trust_command(profile, cwd, "maybe").message == "usage: /trust [yes|no|repo]"


# ---------------------------------------------------------------- bundle

def test_load_project_context_bundle(profile, home, repo):
    from jucode.project.context import load_project_context
    write(str(repo / "AGENTS.md"), "rules")
    write(str(repo / ".jucode" / "commands" / "deploy.md"), "Deploy it\n")
    write(str(repo / ".jucode" / "commands" / "help.md"), "shadowed by the builtin\n")
    write(os.path.join(profile, "skills", "deploy", "SKILL.md"), SKILL_MD.format(name="deploy", desc="Deploy skill"))
    ctx = load_project_context(profile, str(repo), home=home)
    assert not ctx.trusted and ctx.commands == [] and ctx.trust_prompt["cwd"] == os.path.realpath(repo)
    assert [f.content for f in ctx.instructions] == ["rules"]
    tr.trust_command(profile, str(repo), "yes")
    ctx = load_project_context(profile, str(repo), home=home)
    assert ctx.trusted and ctx.trust_prompt is None
    assert [(r["command"], r["marker"]) for r in ctx.command_entries(taken=("/help",))] == [("/deploy", "SKILL")]
    chat_dir = os.path.join(profile, "chats")
    os.makedirs(chat_dir)
    chat = load_project_context(profile, chat_dir, home=home)
    assert chat.chat and chat.instructions == [] and chat.trust_prompt is None
