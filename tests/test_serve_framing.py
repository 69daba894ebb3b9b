"""Framing of `jucode serve`: hello, the startup batch, sessions on every line, malformed input."""

import json
import subprocess
import sys

import pytest

from harness import ENTRY, NO_CONFIG

STARTUP_ORDER = ["startup", "model_status", "command_list", "approval_mode", "mcp_servers"]


@pytest.fixture
def eng(engine):
    return engine(server=None, wait=False)       # the tests read the startup batch themselves


def test_hello_first_then_startup_batch_in_order(eng):
    eng.wait_startup()
    first = json.loads(eng.raw_lines[0])
    assert first == {"type": "hello", "protocol": 2, "version": first["version"]}
    assert "session" not in first
    types = [e["type"] for e in eng.events[1:6]]
    assert types == STARTUP_ORDER
    sid = eng.events[1]["session_id"]
    assert sid.startswith("s")
    for ev in eng.events[1:]:
        assert ev["session"] == sid
    st = eng.events[1]
    for key in ("version", "session_id", "profile_dir", "config_path", "cwd", "model", "context_window"):
        assert key in st
    assert isinstance(st["context_window"], int)
    ms = eng.events[2]
    for key in ("provider", "model", "reasoning_effort", "context_window", "context_limit",
                "max_output_tokens", "reasoning_efforts", "state"):
        assert key in ms
    assert ms["state"] == "ready"


MALFORMED = [
    b"not json",                                  # invalid JSON
    b"[1, 2]",                                    # not an object
    b'"a string"',                                # not an object
    b"42",                                        # not an object
    b'{"content": "hi"}',                         # missing op
    b'{"op": "frobnicate"}',                      # unknown op
    b'{"op": 17}',                                # op of the wrong type
    b'{"op": "user_message", "content": 5}',      # wrong field type
    b'{"op": "set_approval_mode", "mode": "yolo"}',  # bad value
    b'{"op": "approve", "call_id": "", "decision": "allow"}',  # missing call_id
    b'{"op": "steer", "index": "first"}',         # wrong index type
    b"\xff\xfe\xfa garbage bytes",                # invalid UTF-8
    b'{"op": "command", "input": ["/help"]}',     # wrong field type
]


def test_each_malformed_line_gives_one_error_and_engine_keeps_working(eng):
    eng.wait_startup()
    for raw in MALFORMED:
        m = eng.send(raw + b"\n")
        err = eng.wait_for("error", start=m)
        assert err["message"], raw
        # exactly one error per line: the next probe answers before any second error
        probe = eng.send({"op": "command", "input": "/permissions"})
        eng.wait_for("approval_mode", start=probe)
        assert len(eng.since(m, "error")) == 1, (raw, eng.since(m, "error"))
    assert all(e["type"] != "__non_json__" for e in eng.events)


def test_error_texts_follow_upstream(eng):
    eng.wait_startup()
    m = eng.send("{bad")
    assert eng.wait_for("error", start=m)["message"].startswith("invalid command: ")
    m = eng.send({"op": "nope"})
    assert eng.wait_for("error", start=m)["message"] == "unknown op: nope"
    m = eng.send({"content": "x"})
    assert eng.wait_for("error", start=m)["message"] == "unknown op: "


def test_empty_lines_ignored_and_huge_line_survived(eng):
    eng.wait_startup()
    m = eng.send(b"\n   \n\t\n")
    huge = b'{"op":"user_message","content":"' + b"x" * (17 * 1024 * 1024) + b'"}\n'
    eng.send(huge)
    probe = eng.send({"op": "command", "input": "/permissions"})
    eng.wait_for("approval_mode", start=probe, timeout=30)
    errs = eng.since(m, "error")
    assert len(errs) == 1 and "too long" in errs[0]["message"]


@pytest.mark.parametrize("how", ["shutdown", "eof", "/quit", "/exit"])
def test_exit_code_zero(engine, how):
    e = engine(server=None, wait=False)
    e.wait_startup()
    if how == "shutdown":
        e.send({"op": "shutdown"})
    elif how == "eof":
        e.close_stdin()
    else:
        e.send({"op": "command", "input": how})
    assert e.wait_exit(10) == 0
    e.close()


def test_version_flag():
    out = subprocess.run([sys.executable, str(ENTRY), "--version"], capture_output=True, text=True, timeout=20)
    assert out.returncode == 0 and out.stdout.startswith("jucode ")


def test_config_created_with_defaults(engine):
    e = engine(NO_CONFIG, server=None, wait=False)          # no config written by the test
    e.wait_startup()
    cfg = json.loads((e.profile / "config.json").read_text())
    for key in ("provider", "protocol", "model", "api_key_env", "approval_mode", "edit_tools"):
        assert key in cfg
    assert "base_url" not in cfg       # OPENAI_BASE_URL must keep applying
    assert not list(e.profile.glob(".config.json.*.tmp"))
    e.close()


def test_corrupt_config_reported_and_untouched(engine, tmp_path):
    prof = tmp_path / "home" / ".jucode"
    prof.mkdir(parents=True)
    (prof / "config.json").write_text("{not valid json")
    e = engine(NO_CONFIG, server=None, wait=False)
    err = e.wait_for("error")
    assert "config.json" in err["message"]
    e.send({"op": "command", "input": "/model gpt-5.4 low"})
    e.send({"op": "command", "input": "/permissions"})
    e.wait_for("approval_mode", start=7)
    e.close()
    assert (prof / "config.json").read_text() == "{not valid json"


def test_unknown_config_keys_preserved_on_save(engine):
    e = engine({"my_future_key": {"a": 1}, "models": [
        {"name": "m-one", "context_window": 1000, "max_output_tokens": 100, "reasoning_efforts": ["low", "high"]}]}, server=None)
    m = e.send({"op": "command", "input": "/model m-one high"})
    ms = e.wait_for(lambda ev: ev.get("type") == "model_status" and ev.get("model") == "m-one", start=m)
    assert ms["reasoning_effort"] == "high" and ms["context_window"] == 1000
    e.close()
    cfg = json.loads((e.profile / "config.json").read_text())
    assert cfg["my_future_key"] == {"a": 1}
    assert cfg["model"] == "m-one" and cfg["reasoning_effort"] == "high"


def test_approval_mode_aliases_and_errors(eng):
    eng.wait_startup()
    m = eng.send({"op": "set_approval_mode", "mode": "full-auto"})
    assert eng.wait_for("approval_mode", start=m)["mode"] == "full-access"
    st = eng.since(m, "status")
    assert st and st[0]["message"] == "approval mode: full-access"
    m = eng.send({"op": "set_approval_mode", "mode": "read-only"})
    assert eng.wait_for("approval_mode", start=m)["mode"] == "manual"
    m = eng.send({"op": "set_approval_mode", "mode": "yolo"})
    assert eng.wait_for("error", start=m)["message"] == \
        "unknown approval mode 'yolo': use manual, auto-edit, auto, full-access, or plan"


def test_readme_launchers_start_the_engine(tmp_path):
    """The README's `bin/jucode serve` (and the installed console script, when present) speak
    protocol 2 from a fresh profile."""
    import os
    from harness import ROOT
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "JUCODE_"))}
    env.update({"HOME": str(tmp_path), "JUCODE_HOME": str(tmp_path / ".jucode"), "OPENAI_API_KEY": "sk-x"})
    launchers = [[str(ROOT / "bin" / "jucode")]]
    script = ROOT / ".venv" / "bin" / "jucode"
    if script.exists():
        launchers.append([str(script)])
    for cmd in launchers:
        out = subprocess.run(cmd + ["serve"], input=b'{"op":"shutdown"}\n', capture_output=True,
                             timeout=30, env=env, cwd=str(tmp_path))
        assert out.returncode == 0, out.stderr
        first = json.loads(out.stdout.splitlines()[0])
        assert first["type"] == "hello" and first["protocol"] == 2
        version = subprocess.run(cmd + ["--version"], capture_output=True, text=True, timeout=30, env=env)
        assert version.stdout.startswith("jucode ")
