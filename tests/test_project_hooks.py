"""Hooks run as real ``sh -c`` processes: blocking, output, payload, and timeout kills."""

import json
import os
import time

import pytest

from jucode.project import hooks as hk


def write_hooks(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh)


@pytest.fixture
def env(tmp_path):
    profile = tmp_path / "profile"
    cwd = tmp_path / "proj"
    profile.mkdir()
    cwd.mkdir()
    return str(profile), str(cwd), tmp_path


def test_pre_tool_use_blocks_with_stderr_reason(env):
    profile, cwd, _ = env
    write_hooks(os.path.join(profile, "hooks.json"), {"pre_tool_use": [
        {"command": "echo out; echo 'no bash today' >&2; exit 3", "tools": ["bash"]}]})
    hooks = hk.load_hooks(profile, cwd, trusted=False)
    res = hooks.run("pre_tool_use", {"tool": "bash", "arguments": {"command": "ls"}}, cwd, tool="bash")
    assert res.blocked and res.reason == "no bash today"
    assert hk.blocked_tool_output(res.reason) == {"error": "blocked by pre_tool_use hook: no bash today"}
    assert not hooks.run("pre_tool_use", {"tool": "read"}, cwd, tool="read").blocked   # filtered by tools


def test_block_reason_falls_back_to_stdout_then_exit_code(env):
    profile, cwd, _ = env
    write_hooks(os.path.join(profile, "hooks.json"), {
        "user_prompt_submit": [{"command": "echo only stdout; exit 1"}],
        "pre_tool_use": [{"command": "exit 7"}]})
    hooks = hk.load_hooks(profile, cwd, trusted=False)
    assert hooks.run("user_prompt_submit", {"prompt": "hi"}, cwd).reason == "only stdout"
    assert hooks.run("pre_tool_use", {"tool": "x"}, cwd).reason == "pre_tool_use hook exited with code 7"


def test_session_start_output_env_and_payload(env):
    profile, cwd, tmp = env
    dump = tmp / "stdin.json"
    write_hooks(os.path.join(profile, "hooks.json"), {"session_start": [
        {"command": f"cat > {dump}; echo \"started $JUCODE_HOOK_EVENT in $(pwd)\""},
        {"command": "true"},
        {"command": "echo failing but not blocking; exit 1"}]})
    res = hk.load_hooks(profile, cwd, trusted=False).run("session_start", None, cwd)
    assert not res.blocked
    assert res.infos == [f"hook (session_start): started session_start in {cwd}",
                         "hook (session_start): failing but not blocking"]
    assert json.loads(dump.read_text()) == {"event": "session_start", "cwd": cwd}


def test_project_hooks_only_when_trusted(env):
    profile, cwd, _ = env
    write_hooks(os.path.join(cwd, ".jucode", "hooks.json"), {"stop": [{"command": "echo project"}]})
    write_hooks(os.path.join(profile, "hooks.json"), {"stop": "echo user", "bogus": []})
    assert hk.load_hooks(profile, cwd, False).run("stop", None, cwd).infos == ["hook (stop): user"]
    assert hk.load_hooks(profile, cwd, True).run("stop", None, cwd).infos == [
        "hook (stop): user", "hook (stop): project"]
    with open(os.path.join(profile, "hooks.json"), "w") as fh:
        fh.write("{broken")
    assert hk.load_hooks(profile, cwd, False).errors[0].startswith("failed to load hooks from ")


def _gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[1].startswith("Z")   # zombie awaiting its reaper = dead
    except FileNotFoundError:
        return True


def test_hanging_hook_killed_with_its_grandchild(env):
    profile, cwd, tmp = env
    pidfile = tmp / "grandchild.pid"
    write_hooks(os.path.join(profile, "hooks.json"), {"pre_tool_use": [
        {"command": f"sleep 300 & echo $! > {pidfile}; wait"}]})
    hooks = hk.load_hooks(profile, cwd, False)
    started = time.monotonic()
    res = hooks.run("pre_tool_use", {"tool": "bash"}, cwd, timeout=0.5)
    assert time.monotonic() - started < 5
    assert res.blocked and "timed out after 0.5s" in res.reason
    assert res.errors == [res.reason]
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _gone(pid)
