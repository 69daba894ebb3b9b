"""PartialPlanParser (plan_draft streaming) and PlanBook (approve_plan validation)."""

import json
import random
import re

import pytest

from jucode.planmode import (PartialPlanParser, PlanBook, PlanError, new_plan_id, propose_plan_result)

TRICKY_PLANS = [
    "# Plan\n\n## Goal & principles\n- keep it \"simple\"\n- path C:\\temp\\x\n",
    "| File | Change | Why |\n| --- | --- | --- |\n| `a.py` | add \\n escape | tabs\there |\n",
    "Emoji 🎉 and 👩‍💻 and CJK 计划 and é / ü, plus a lone \u2028 separator",
    "quotes \" and backslashes \\\\ and slashes / and {braces} [brackets], commas, colons:",
    "control \b\f\r chars and \u0001 low ones and a trailing backslash \\",
    "",
    "x",
]


def _encodings(title, plan):
    """Several valid JSON spellings of the same arguments."""
    yield json.dumps({"title": title, "plan": plan})                       # \uXXXX escapes
    yield json.dumps({"title": title, "plan": plan}, ensure_ascii=False)   # raw UTF-8
    yield json.dumps({"plan": plan, "title": title}, indent=2)             # plan first, spaced
    # extra keys (nested values containing the word "plan") must be ignored
    yield json.dumps({"meta": {"plan": "no", "list": ["\"}", {"title": "x"}]}, "n": 3,
                      "title": title, "ok": True, "plan": plan, "z": None})
    # "/" escaped as "\/" (valid JSON some encoders emit)
    yield json.dumps({"title": title, "plan": plan}).replace("/", "\\/")


def _random_chunks(text, rng):
    out, i = [], 0
    while i < len(text):
        n = rng.choice([1, 1, 2, 3, 5, 8, 13, 40])
        out.append(text[i:i + n])
        i += n
    return out


def test_partial_parser_reassembles_random_chunkings():
    rng = random.Random(1234)
    for plan in TRICKY_PLANS:
        for raw in _encodings("Title \"β\" 🎯", plan):
            for _ in range(40):
                parser = PartialPlanParser()
                appends, titles = [], []
                for chunk in _random_chunks(raw, rng):
                    title, append = parser.feed(chunk)
                    appends.append(append)
                    titles.append(title)
                    # every prefix is a prefix of the final value (never retracts)
                    assert plan.startswith("".join(appends))
                assert "".join(appends) == plan, (raw, appends)
                assert titles[-1] == "Title \"β\" 🎯"
                assert parser.plan == plan


def test_partial_parser_surrogate_pair_split_across_chunks():
    raw = '{"title":"t","plan":"a\\ud83c\\udf89b"}'
    cut = raw.index("\\udf89")
    parser = PartialPlanParser()
    _, first = parser.feed(raw[:cut])
    assert first == "a"        # the high half waits for its partner
    _, second = parser.feed(raw[cut:cut + 3])
    assert second == ""
    _, rest = parser.feed(raw[cut + 3:])
    assert first + second + rest == "a🎉b" == json.loads(raw)["plan"]


def test_partial_parser_lone_surrogate_matches_json_loads():
    raw = '{"title":"t","plan":"x\\ud83dy\\udc00"}'
    parser = PartialPlanParser()
    got = "".join(parser.feed(c)[1] for c in raw)
    assert got == json.loads(raw)["plan"]


def test_partial_parser_title_streams():
    parser = PartialPlanParser()
    assert parser.feed('{"title": "Refac') == ("Refac", "")
    assert parser.feed('tor parser", "plan": "# St') == ("Refactor parser", "# St")
    assert parser.feed('eps\\n1. x"}') == ("Refactor parser", "eps\n1. x")


def test_plan_id_shape():
    ids = {new_plan_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(re.fullmatch(r"plan-[0-9a-f]{16}", i) for i in ids)
    res = propose_plan_result("plan-0123456789abcdef")
    assert res["status"] == "proposed" and res["id"] == "plan-0123456789abcdef"


def test_planbook_validation_errors():
    book = PlanBook()
    plan = book.add("Fix it", "# Steps")
    cases = [
        (dict(plan_id="", decision="approve"), "approve_plan requires id"),
        (dict(plan_id=None, decision="approve"), "approve_plan requires id"),
        (dict(plan_id=plan.id, decision="maybe"), "approve_plan requires decision: approve or revise"),
        (dict(plan_id=plan.id, decision=None), "approve_plan requires decision: approve or revise"),
        (dict(plan_id="plan-nope", decision="approve"), "unknown plan: plan-nope"),
        (dict(plan_id=plan.id, decision="revise"), "revising a plan needs feedback"),
        (dict(plan_id=plan.id, decision="revise", feedback="  "), "revising a plan needs feedback"),
    ]
    for kwargs, message in cases:
        with pytest.raises(PlanError) as exc:
            book.decide(**kwargs)
        assert str(exc.value) == message
    with pytest.raises(PlanError):
        book.decide(plan.id, "approve", mode="plan")
    assert plan.status == "pending"       # failed validations change nothing


def test_planbook_transitions():
    book = PlanBook()
    plan = book.add("Fix it", "# Steps")
    assert plan.status == "pending"
    rev = book.decide(plan.id, "revise", feedback="Also add a test")
    assert rev.mode == "plan" and plan.status == "revising"
    assert "Also add a test" in rev.message and "propose_plan" in rev.message
    ok = book.decide(plan.id, "approve", feedback="go slowly")
    assert ok.mode == "auto-edit" and plan.status == "approved"
    assert "Fix it" in ok.message and "go slowly" in ok.message
    assert plan.event_fields() == {"id": plan.id, "title": "Fix it", "markdown": "# Steps",
                                   "status": "approved"}
    assert plan.transcript_item()["role"] == "plan"
    with pytest.raises(PlanError) as exc:
        book.decide(plan.id, "approve")
    assert str(exc.value) == "this plan was already approved"
    other = book.add("B", "b")
    assert book.decide(other.id, "approve", mode="full-access").mode == "full-access"
