"""Journal, sidecar and lock: real files in tmp dirs, real child processes for the lock."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time

import pytest

from jucode.session import (SessionError, SessionLockError, SessionStore, SessionWriteError,
                            list_sessions)
from jucode.session.paths import cwd_hash, fnv1a64, new_session_id, parse_entry_id, sessions_dir

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CWD = "/work/some/project"


def user(text):
    return {"type": "user", "content": text}


def call(cid, name="bash", args='{"command":"ls"}'):
    return {"type": "response_item", "item": {"type": "function_call", "call_id": cid, "name": name,
                                              "arguments": args}}


def output(cid, text="ok", name="bash"):
    return {"type": "tool_output", "call_id": cid, "name": name, "output": text}


def say(text):
    return {"type": "response_item", "item": {"type": "message", "role": "assistant",
                                              "content": [{"type": "output_text", "text": text}]}}


# ---- ids and layout ------------------------------------------------------------------------

def test_fnv_and_layout(tmp_path):
    assert fnv1a64(b"") == 0xCBF29CE484222325
    assert fnv1a64(b"a") == 0xAF63DC4C8601EC8C          # published FNV-1a-64 test vector
    assert cwd_hash("/tmp") == f"{fnv1a64(b'/tmp'):016x}"
    assert sessions_dir(tmp_path, "/tmp") == os.path.join(str(tmp_path), "sessions", cwd_hash("/tmp"))
    sid = new_session_id(1_700_000_000 * 10**9 + 5)
    assert sid == "s" + format(1_700_000_000, "x") + "00000005"
    assert parse_entry_id("e12") == 12 and parse_entry_id("ee3") == 3 and parse_entry_id("x") is None


def test_append_reload_round_trip(tmp_path):
    store = SessionStore.create(tmp_path, CWD)
    e1 = store.append(user("hello"))
    store.append(call("c1"))
    store.append(output("c1", "files"))
    store.append(say("done"))
    store.set_goal({"objective": "ship", "status": "active"})
    store.sync()
    assert e1.id == 1 and e1.parent_id is None
    d = sessions_dir(tmp_path, CWD)
    assert sorted(os.listdir(d)) == sorted([f"{store.id}.jsonl", f"{store.id}.json", f"{store.id}.lock"])
    lock = json.loads(open(os.path.join(d, f"{store.id}.lock")).read())
    assert lock == {"pid": os.getpid()}
    assert store.close() is None
    assert not os.path.exists(os.path.join(d, f"{store.id}.lock"))

    again = SessionStore.open(tmp_path, CWD, store.id)
    try:
        assert again.load_warnings == []
        assert [e.kind for e in again.entries.values()] == [user("hello"), call("c1"), output("c1", "files"),
                                                            say("done")]
        assert [e.parent_id for e in again.entries.values()] == [None, 1, 2, 3]
        assert again.leaf_id == 4 and again.next_id == 5
        assert again.branch_heads == {"root": 4}
        assert again.goal == {"objective": "ship", "status": "active"}
        e5 = again.append(user("more"))
        assert e5.id == 5 and e5.parent_id == 4
    finally:
        again.close()
    sidecar = json.loads(open(os.path.join(d, f"{store.id}.json")).read())
    assert sidecar["version"] == 3 and sidecar["entries_count"] == 5 and sidecar["leaf_id"] == 5
    assert sidecar["journal"] == f"{store.id}.jsonl" and sidecar["label"] == "hello"


def test_unsynced_appends_survive_a_kill(tmp_path):
    """Lines are flushed per append: a SIGKILLed engine loses nothing it appended."""
    script = (
        "import sys, os, signal\n"
        f"sys.path.insert(0, {REPO!r})\n"
        "from jucode.session import SessionStore\n"
        f"s = SessionStore.create({str(tmp_path)!r}, {CWD!r})\n"
        "for i in range(5): s.append({'type': 'user', 'content': f'm{i}'})\n"
        "print(s.id, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    sid = proc.stdout.strip()
    assert sid.startswith("s")
    store = SessionStore.open(tmp_path, CWD, sid)   # the dead pid's lock is reclaimed
    try:
        assert [e.kind["content"] for e in store.entries.values()] == [f"m{i}" for i in range(5)]
        assert store.leaf_id == 5
    finally:
        store.close()


def test_torn_last_line_loads_with_warning(tmp_path):
    store = SessionStore.create(tmp_path, CWD)
    store.append(user("one"))
    store.append(say("two"))
    store.sync()
    store.append(user("three"))
    sid, path = store.id, store.journal_path
    store.close()
    # Cut the final line in half by hand, as a crash mid-write would.
    data = open(path, "rb").read()
    lines = data.split(b"\n")
    tail = b'{"type":"entry","entry":{"id":4,"parent_id":3,"created_at":1,"kind":{"type":"user","content":"fo'
    with open(path, "wb") as f:
        f.write(data + tail[: len(tail) // 2])
    assert lines[-1] == b""
    again = SessionStore.open(tmp_path, CWD, sid)
    assert len(again.load_warnings) == 1 and "torn" in again.load_warnings[0]
    assert [e.kind.get("content") for e in again.entries.values() if e.type == "user"] == ["one", "three"]
    again.append(user("four"))          # sealed first: the new line is readable
    again.close()
    third = SessionStore.open(tmp_path, CWD, sid)
    try:
        assert third.load_warnings == [f"session {sid}: skipped 1 unreadable journal line(s)"]
        assert third.entries[third.leaf_id].kind == user("four")
        assert len(third.entries) == 4
    finally:
        third.close()


def test_garbage_and_duplicate_lines_are_tolerated(tmp_path):
    store = SessionStore.create(tmp_path, CWD)
    store.append(user("a"))
    store.append(say("b"))
    store.close()
    with open(store.journal_path, "ab") as f:
        f.write(b"not json at all\n")
        f.write(b'{"type":"entry","entry":{"id":"e2","parent_id":1,"created_at":5,"kind":{"type":"user","content":"b2"}}}\n')
        f.write(b'{"type":"entry","entry":{"id":3,"parent_id":2,"kind":{"User":{"content":"legacy"}}}}\n')
    again = SessionStore.open(tmp_path, CWD, store.id)
    try:
        assert len(again.entries) == 3                    # e2 deduplicated (last wins)
        assert again.entries[2].kind == user("b2")
        assert again.entries[3].kind == {"type": "user", "content": "legacy"}
        assert again.leaf_id == 3
        assert any("unreadable" in w for w in again.load_warnings)
    finally:
        again.close()


def test_legacy_full_json_session_loads(tmp_path):
    d = sessions_dir(tmp_path, CWD)
    os.makedirs(d)
    legacy = {"id": "s1", "created_at": 10, "updated_at": 20, "leaf_id": 2, "next_id": 3,
              "branch_heads": {"root": 2},
              "entries": [{"id": 1, "parent_id": None, "created_at": 10, "kind": {"type": "user", "content": "old"}},
                          {"id": 2, "parent_id": 1, "created_at": 11, "kind": say("reply")}]}
    with open(os.path.join(d, "s1.json"), "w") as f:
        json.dump(legacy, f)
    assert [s.label for s in list_sessions(tmp_path, CWD)] == ["old"]
    store = SessionStore.open(tmp_path, CWD, "s1")
    assert store.leaf_id == 2 and len(store.entries) == 2
    store.append(user("new"))
    store.close()
    again = SessionStore.open(tmp_path, CWD, "s1")
    try:
        assert len(again.entries) == 3 and again.entries[3].parent_id == 2
    finally:
        again.close()


def test_open_missing_session(tmp_path):
    with pytest.raises(SessionError, match="session not found: s123"):
        SessionStore.open(tmp_path, CWD, "s123")


# ---- lock --------------------------------------------------------------------------------

def test_second_store_gets_lock_error(tmp_path):
    first = SessionStore.create(tmp_path, CWD)
    first.append(user("x"))
    try:
        t0 = time.monotonic()
        with pytest.raises(SessionLockError) as info:
            SessionStore.open(tmp_path, CWD, first.id, lock_wait=0.3)
        assert time.monotonic() - t0 >= 0.25
        lock = os.path.join(sessions_dir(tmp_path, CWD), f"{first.id}.lock")
        assert str(info.value) == (f"session {first.id} is already open by pid {os.getpid()}; "
                                   f"close it first or delete {lock} if stale")
    finally:
        first.close()
    SessionStore.open(tmp_path, CWD, first.id).close()


def test_dead_pid_lock_is_reclaimed(tmp_path):
    store = SessionStore.create(tmp_path, CWD)
    store.append(user("x"))
    sid = store.id
    store.close()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock = os.path.join(sessions_dir(tmp_path, CWD), f"{sid}.lock")
    with open(lock, "w") as f:
        json.dump({"pid": dead.pid}, f)
    again = SessionStore.open(tmp_path, CWD, sid, lock_wait=0)
    assert json.loads(open(lock).read()) == {"pid": os.getpid()}
    again.close()
    assert not os.path.exists(lock)


def test_lock_waits_for_a_live_owner_to_close(tmp_path):
    store = SessionStore.create(tmp_path, CWD)
    store.append(user("x"))
    sid = store.id
    store.close()
    script = (f"import sys; sys.path.insert(0, {REPO!r})\n"
              "from jucode.session import SessionStore\n"
              f"s = SessionStore.open({str(tmp_path)!r}, {CWD!r}, {sid!r})\n"
              "print('ready', flush=True)\n"
              "sys.stdin.read()\n"
              "s.close()\n")
    child = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        with pytest.raises(SessionLockError, match=f"by pid {child.pid};"):
            SessionStore.open(tmp_path, CWD, sid, lock_wait=0)
        child.stdin.close()                       # owner closes within the 2 s wait
        again = SessionStore.open(tmp_path, CWD, sid, lock_wait=10)
        again.close()
    finally:
        child.kill()
        child.wait()


# ---- write failures ----------------------------------------------------------------------

def test_disk_full_raises_and_retries(tmp_path):
    store = SessionStore.create(tmp_path, CWD)
    store.append(user("a"))
    real = store._write

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    store._write = full
    with pytest.raises(SessionWriteError) as info:
        store.append(say("b"))
    assert str(info.value).startswith("failed to save session: ") and "No space left" in str(info.value)
    assert info.value.entry.id == 2 and store.leaf_id == 2       # the session goes on in memory
    with pytest.raises(SessionWriteError):
        store.sync()
    store._write = real
    store.append(user("c"))                                       # pending line written first
    store.close()
    again = SessionStore.open(tmp_path, CWD, store.id)
    try:
        assert [e.id for e in again.entries.values()] == [1, 2, 3]
        assert again.load_warnings == []
    finally:
        again.close()


def test_unwritable_profile_raises_write_error(tmp_path):
    blocker = tmp_path / "sessions"
    blocker.write_text("a file where the sessions dir should be")
    with pytest.raises(SessionWriteError, match="^failed to create session: "):
        SessionStore.create(tmp_path, CWD)


def test_list_sessions_newest_first(tmp_path):
    d = sessions_dir(tmp_path, CWD)
    for i, text in enumerate(["first", "second"]):
        s = SessionStore.create(tmp_path, CWD, session_id=f"s{i}")
        s.append(user(text + "\nmore lines"))
        s.close()
        path = os.path.join(d, f"s{i}.json")
        sidecar = json.loads(open(path).read())
        sidecar["updated_at"] = 200 - i * 100          # s0 is the newer one
        with open(path, "w") as f:
            json.dump(sidecar, f)
    other = SessionStore.create(tmp_path, "/elsewhere")
    other.append(user("not here"))
    other.close()
    listed = list_sessions(tmp_path, CWD, active_id="s1")
    assert [s.id for s in listed] == ["s0", "s1"]
    assert [s.to_item() for s in listed] == [{"id": "s0", "label": "first", "active": False},
                                             {"id": "s1", "label": "second", "active": True}]
    assert "entries 1" in listed[0].detail and listed[0].detail.endswith("e1")
    assert list_sessions(tmp_path, "/nowhere") == []
