"""The watchdog-based watcher against real files: callbacks arrive fast and stop() is clean."""

import os
import queue
import subprocess
import sys
import threading
import time

import pytest

from jucode.project import watcher as wt


@pytest.fixture
def setup(tmp_path):
    profile = tmp_path / "profile"
    home = tmp_path / "home"
    cwd = tmp_path / "proj"
    for d in (profile / "commands", home, cwd):
        d.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(cwd)], check=True)
    changes: "queue.Queue[str]" = queue.Queue()
    w = wt.ProjectWatcher(str(profile), str(cwd), changes.put, home=str(home))
    w.start()
    assert w.ready.wait(5)
    yield w, changes, profile, cwd
    w.stop()


def wait_kind(changes, kind, timeout=1.0):
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        try:
            got = changes.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break
        seen.append(got)
        if got == kind:
            return seen
    raise AssertionError(f"no {kind!r} change within {timeout}s (saw {seen})")


def test_command_file_triggers_callback_and_bursts_are_debounced(setup):
    w, changes, profile, _ = setup
    path = profile / "commands" / "hello.md"
    started = time.monotonic()
    for i in range(5):
        path.write_text(f"say hello {i}\n")
    wait_kind(changes, "commands", timeout=1.0)
    assert time.monotonic() - started < 1.0
    time.sleep(0.4)   # let any straggling debounce window pass: we assert there was only one report
    assert changes.empty()
    (profile / "notes.txt").write_text("irrelevant")
    (profile / "config.json").write_text("{}")
    assert wait_kind(changes, "config") == ["config"]


def test_missing_project_dirs_are_picked_up_when_created(setup):
    w, changes, _, cwd = setup
    (cwd / ".jucode" / "commands").mkdir(parents=True)
    (cwd / ".jucode" / "commands" / "deploy.md").write_text("deploy\n")
    wait_kind(changes, "commands")
    (cwd / ".jucode" / "hooks.json").write_text("{}")
    wait_kind(changes, "hooks")
    (cwd / "AGENTS.md").write_text("rules\n")
    wait_kind(changes, "instructions")
    (cwd / ".agents" / "skills" / "s1").mkdir(parents=True)
    (cwd / ".agents" / "skills" / "s1" / "SKILL.md").write_text("---\ndescription: d\n---\n")
    wait_kind(changes, "skills")


def test_stop_is_clean_and_idempotent(tmp_path):
    before = set(threading.enumerate())
    wt.ProjectWatcher(str(tmp_path), str(tmp_path), lambda kind: None).stop()   # never started: harmless
    w = wt.ProjectWatcher(str(tmp_path), str(tmp_path), lambda kind: None, home=str(tmp_path))
    w.start()
    assert w.ready.wait(5)
    w.stop()
    w.stop()
    deadline = time.monotonic() + 2
    while set(threading.enumerate()) - before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not (set(threading.enumerate()) - before)


def test_classify(tmp_path):
    w = wt.ProjectWatcher(str(tmp_path / "p"), str(tmp_path / "c"), lambda k: None, home=str(tmp_path / "h"))
    p, c = w.profile_dir, w.cwd
    assert w.classify(os.path.join(p, "commands", "a.md")) == "commands"
    assert w.classify(os.path.join(p, "commands", "a.txt")) is None
    assert w.classify(os.path.join(p, "skills", "x", "y", "SKILL.md")) == "skills"
    assert w.classify(os.path.join(p, "hooks.json")) == "hooks"
    assert w.classify(os.path.join(p, "sessions", "s.json")) is None
    assert w.classify(os.path.join(c, ".jucode", "checkpoints", "cp.json")) is None
    assert w.classify(os.path.join(c, "CLAUDE.md")) == "instructions"
    assert w.classify(os.path.join(c, "src", "AGENTS.md")) is None


def test_project_modules_do_not_import_heavy_deps():
    code = ("import sys, jucode.project.watcher, jucode.project.prompt, jucode.project.hooks, "
            "jucode.project.custom_commands, jucode.project.trust, jucode.goals; "
            "bad = [m for m in ('watchdog', 'openai', 'tiktoken', 'requests') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    res = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
