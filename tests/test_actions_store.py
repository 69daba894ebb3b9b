"""Deferred actions: digest/id shape, reuse, persistence across store instances, decide errors."""

import hashlib
import json
import os
import re

import pytest

from jucode.actions import (ActionError, ActionStore, action_digest, approved_message,
                            declined_message, submitted_result)
from jucode.events import event

ARGS = '{"command":"rm -rf build"}'


def _defer(store, **kw):
    base = dict(session_id="s1", cwd="/w", call_id="call_2", name="bash", arguments=ARGS,
                summary="rm -rf build")
    base.update(kw)
    return store.defer(**base)


def test_digest_and_id_shape(tmp_path):
    expected = hashlib.sha256(b"bash\0" + ARGS.encode() + b"\0/w\0").digest()[:12].hex()
    assert action_digest("bash", ARGS, "/w") == expected
    act, reused = _defer(ActionStore(str(tmp_path)), now_ms=1727500000000)
    assert not reused
    assert act.digest == expected and len(act.digest) == 24
    assert act.id == f"act-1727500000000-{expected[:8]}"
    assert re.fullmatch(r"act-\d+-[0-9a-f]{8}", act.id)
    ev = event("action_deferred", **act.event_fields())      # field names are valid
    assert ev["arguments"] == ARGS and ev["subagent_id"] is None and ev["created_at"] == 1727500000000


def test_identical_call_reuses_open_action(tmp_path):
    store = ActionStore(str(tmp_path))
    first, _ = _defer(store)
    again, reused = _defer(store, call_id="call_9")
    assert reused and again.id == first.id
    other, reused2 = _defer(store, cwd="/elsewhere")
    assert not reused2 and other.id != first.id
    assert len(store.list(open_only=True)) == 2


def test_persistence_across_instances_and_decided_reuse(tmp_path):
    a = ActionStore(str(tmp_path))
    act, _ = _defer(a)
    b = ActionStore(str(tmp_path))                      # a "restarted" engine
    assert b.get(act.id).arguments == ARGS
    decided = b.decide(act.id, "allow", session_id="s1")
    assert decided.decision == "allow"
    b.record_output(act.id, '{"exit_code":0}', False)
    c = ActionStore(str(tmp_path))
    again, reused = _defer(c)
    assert reused and again.id == act.id and again.decision == "allow"
    assert again.output == '{"exit_code":0}'
    assert c.get(act.id).decided_fields() == {"id": act.id, "decision": "allow",
                                              "output": '{"exit_code":0}', "is_error": False}
    # atomic writes leave no temp files behind; the file is valid JSON
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
    json.loads((tmp_path / "deferred_actions.json").read_text())


def test_decide_errors(tmp_path):
    store = ActionStore(str(tmp_path))
    act, _ = _defer(store)
    with pytest.raises(ActionError) as e1:
        store.decide("act-1-deadbeef", "allow")
    assert str(e1.value) == "no deferred action act-1-deadbeef"
    with pytest.raises(ActionError) as e2:
        store.decide(act.id, "deny", session_id="other")
    assert str(e2.value) == f"deferred action {act.id} belongs to session s1"
    with pytest.raises(ActionError) as e3:
        store.decide(act.id, "maybe")
    assert str(e3.value) == "decide_action requires action and decision: allow or deny"
    denied = store.decide(act.id, "deny")
    assert denied.decided_fields() == {"id": act.id, "decision": "deny", "output": None, "is_error": False}
    with pytest.raises(ActionError):
        store.decide(act.id, "allow")          # already decided


def test_texts(tmp_path):
    act, _ = _defer(ActionStore(str(tmp_path)))
    res = submitted_result(act)
    assert res["status"] == "submitted for confirmation" and res["action_id"] == act.id
    assert res["note"].startswith("No one is watching this session")
    assert res["note"].endswith("Do not submit the same call again.")
    assert "error" not in res
    msg = declined_message(act)
    assert msg.startswith(f"[deferred action {act.id} declined]\nThe user declined `bash` (rm -rf build). "
                          "Do not retry it;")
    ok = approved_message(act, '{"exit_code":0}', False)
    assert ok.startswith(f"[deferred action {act.id} approved and executed]\n")
    assert ok.endswith('\nresult:\n{"exit_code":0}')
    bad = approved_message(act, '{"exit_code":1}', True)
    assert bad.startswith(f"[deferred action {act.id} approved and executed, failed]\n")


def test_corrupt_store_is_tolerated(tmp_path):
    (tmp_path / "deferred_actions.json").write_text("{not json")
    store = ActionStore(str(tmp_path))
    assert store.list() == []
    act, reused = _defer(store)
    assert not reused and ActionStore(str(tmp_path)).get(act.id) is not None
