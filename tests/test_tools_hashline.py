import pytest

from jucode.tools.hashline import ALPHABET, format_line, line_hash
from jucode.tools.xxhash32 import xxh32
from test_tools_helpers import call, make_ctx


@pytest.mark.parametrize("data,seed,expected", [
    (b"", 0, 0x02CC5D05),
    (b"a", 0, 0x550D7456),
    (b"abc", 0, 0x32D153FF),
    (b"Nobody inspects the spammish repetition", 0, 0xE2293B2F),
    (b"", 1, 0x0B2CB792),
])
def test_xxh32_vectors(data, seed, expected):
    assert xxh32(data, seed) == expected


def test_line_hash_rules():
    v = xxh32(b"abc", 0) & 0xFF
    assert line_hash("abc", 7) == ALPHABET[v >> 4] + ALPHABET[v & 0xF]
    assert line_hash("abc  \r", 3) == line_hash("abc", 9)     # trailing ws ignored, seed 0
    v = xxh32(b"}", 4) & 0xFF                                 # no alphanumerics: seed = line number
    assert line_hash("}", 4) == ALPHABET[v >> 4] + ALPHABET[v & 0xF]
    assert format_line(4, "}") == f"4#{line_hash('}', 4)}:}}"


def _setup(tmp_path, text):
    (tmp_path / "f.txt").write_text(text)
    ctx = make_ctx(tmp_path)
    res, _ = call(ctx, "read", {"path": "f.txt"})
    anchors = [l.split(":", 1)[0] for l in res["hashlines"].splitlines()]
    return ctx, anchors


def test_replace_append_prepend(tmp_path):
    ctx, a = _setup(tmp_path, "one\ntwo\nthree\nfour\n")
    res, err = call(ctx, "hashline_edit", {"path": "f.txt", "edits": [
        {"op": "replace", "pos": a[1], "lines": ["TWO", "TWO.5"]},
        {"op": "append", "pos": a[3], "lines": "five\n"},
        {"op": "prepend", "pos": a[0], "lines": ["zero"]},
        {"op": "replace", "pos": a[2], "end": a[2], "lines": []},
    ]})
    assert not err, res
    assert (tmp_path / "f.txt").read_text() == "zero\none\nTWO\nTWO.5\nfour\nfive\n"
    assert res["edits"] == 4 and res["diff"].startswith("--- a/f.txt\n+++ b/f.txt\n")
    assert res["anchors"].startswith("--- Anchors 1-6 ---\n1#")
    # chained edit using fresh anchors from the result, no re-read needed
    fresh = res["anchors"].splitlines()[1].split(":", 1)[0]
    res, err = call(ctx, "hashline_edit", {"path": "f.txt", "edits": [
        {"op": "append", "lines": ["six"]}, {"op": "replace", "pos": fresh, "lines": "Zero"}]})
    assert not err
    assert (tmp_path / "f.txt").read_text() == "Zero\none\nTWO\nTWO.5\nfour\nfive\nsix\n"


def test_errors(tmp_path):
    ctx, a = _setup(tmp_path, "one\ntwo\n")
    other = "Z" if a[0][-1] != "Z" else "P"
    stale = a[0][:-1] + other

    def err(edit):
        res, is_err = call(ctx, "hashline_edit", {"path": "f.txt", "edits": [edit]})
        assert is_err
        return res["error"]

    assert err({"pos": a[0], "lines": []}) == "each hashline edit requires op"
    assert err({"op": "delete", "lines": []}) == \
        '[E_BAD_OP] Unknown edit op "delete". Expected replace, append, or prepend.'
    assert err({"op": "replace", "lines": ["x"]}) == "[E_BAD_OP] Replace requires a pos anchor."
    assert err({"op": "append", "pos": a[0], "end": a[1], "lines": ["x"]}) == \
        "[E_BAD_OP] append does not support an end anchor."
    assert err({"op": "prepend", "lines": []}) == "[E_BAD_OP] prepend requires at least one line."
    assert err({"op": "replace", "pos": a[1], "end": a[0], "lines": []}) == \
        "[E_BAD_OP] Range start line 2 must be <= end line 1."
    assert err({"op": "replace", "pos": a[0]}) == "each hashline edit requires lines"
    assert err({"op": "replace", "pos": a[0], "lines": [1]}) == "lines array must contain only strings"
    assert err({"op": "replace", "pos": a[0], "lines": 5}) == "lines must be a string or an array of strings"
    assert err({"op": "replace", "pos": a[0], "lines": [a[1] + ":two"]}).startswith(
        "[E_INVALID_PATCH] lines must contain literal file content, not LINE#HASH or diff prefixes. "
        "Offending line: ")
    assert err({"op": "replace", "pos": "12", "lines": []}) == \
        '[E_BAD_REF] Invalid line reference "12". Expected LINE#HASH.'
    assert err({"op": "replace", "pos": "x#ZZ", "lines": []}) == \
        '[E_BAD_REF] Invalid line reference "x#ZZ". Expected numeric LINE#HASH.'
    assert err({"op": "replace", "pos": "0#ZZ", "lines": []}) == '[E_BAD_REF] Line number must be >= 1 in "0#ZZ".'
    assert err({"op": "replace", "pos": "1#AA", "lines": []}) == (
        '[E_BAD_REF] Invalid line reference "1#AA": hash must be exactly 2 characters from ZPMQVRWSNKTXJBYH.')
    assert err({"op": "replace", "pos": "9#ZZ", "lines": []}) == \
        "[E_RANGE_OOB] Line 9 does not exist (file has 3 lines)."
    text = err({"op": "replace", "pos": stale, "lines": ["x"]})
    assert text.startswith("[E_STALE_ANCHOR] 1 stale anchor(s). Retry with the >>> LINE#HASH lines below.\n")
    assert f">>> {a[0]}:one" in text
    res, _ = call(ctx, "hashline_edit", {"path": "f.txt", "edits": [
        {"op": "replace", "pos": a[0], "end": a[1], "lines": ["x"]}, {"op": "replace", "pos": a[1], "lines": []}]})
    assert res["error"] == "[E_EDIT_CONFLICT] hashline edits must not overlap."
    res, _ = call(ctx, "hashline_edit", {"path": "f.txt", "edits": [
        {"op": "append", "pos": a[0], "lines": ["x"]}, {"op": "prepend", "pos": a[1], "lines": ["y"]}]})
    assert res["error"] == "[E_EDIT_CONFLICT] hashline edits target the same insertion boundary."
    # anchor markers copied from a stale report are accepted
    res, is_err = call(ctx, "hashline_edit", {"path": "f.txt", "edits": [
        {"op": "replace", "pos": f">>> {a[0]}:one", "lines": ["ONE"]}]})
    assert not is_err and (tmp_path / "f.txt").read_text() == "ONE\ntwo\n"


def test_requires_read_and_checkpoint(tmp_path):
    (tmp_path / "g.txt").write_text("x\n")
    ctx = make_ctx(tmp_path)
    res, _ = call(ctx, "hashline_edit", {"path": "g.txt", "edits": [{"op": "append", "lines": ["y"]}]})
    assert res["error"].startswith("hashline_edit requires reading this file first")
    call(ctx, "read", {"path": "g.txt"})
    assert not call(ctx, "hashline_edit", {"path": "g.txt", "edits": [{"op": "append", "lines": ["y"]}]})[1]
    res, _ = call(ctx, "checkpoint", {"action": "list"})
    assert res["checkpoints"][0]["name"] == "auto-hashline-edit"
