import base64
import os

from jucode.tools.common import MSG_CHANGED, MSG_NOT_READ
from test_tools_helpers import call, make_ctx


def test_read_text_hashlines_and_offsets(tmp_path):
    (tmp_path / "a.txt").write_text("alpha\nbeta\ngamma\n")
    ctx = make_ctx(tmp_path)
    res, err = call(ctx, "read", {"path": "a.txt", "offset": 2, "limit": 1})
    assert not err
    assert res["kind"] == "text" and res["encoding"] == "utf-8"
    assert res["content"] == "beta\n" and res["lines_read"] == 1 and res["truncated"] is True
    assert res["hashlines"].startswith("2#") and res["hashlines"].endswith(":beta\n")
    res, _ = call(ctx, "read", {"path": "a.txt"})
    assert res["lines_read"] == 3 and res["truncated"] is False
    assert [l.split(":", 1)[1] for l in res["hashlines"].splitlines()] == ["alpha", "beta", "gamma"]


def test_read_boms_binary_image(tmp_path):
    ctx = make_ctx(tmp_path)
    (tmp_path / "u16").write_bytes(b"\xff\xfe" + "hé\n".encode("utf-16-le"))
    res, _ = call(ctx, "read", {"path": "u16"})
    assert res["encoding"] == "utf-16le" and res["content"] == "hé\n"
    (tmp_path / "bom").write_bytes(b"\xef\xbb\xbfx\n")
    res, _ = call(ctx, "read", {"path": "bom"})
    assert res["content"] == "x\n"
    (tmp_path / "bin").write_bytes(b"\x00\x01\xff\xfe\x00")
    res, err = call(ctx, "read", {"path": "bin"})
    assert err and res["kind"] == "binary" and res["error"] == "file is not supported text encoding"
    (tmp_path / "p.png").write_bytes(b"\x89PNG....")
    res, err = call(ctx, "read", {"path": "p.png"})
    assert not err and res["mime"] == "image/png" and base64.b64decode(res["base64"]) == b"\x89PNG...."
    (tmp_path / "big.png").write_bytes(b"\0" * (1024 * 1024 + 1))
    res, err = call(ctx, "read", {"path": "big.png"})
    assert err and res["truncated"] is True and "base64" not in res


def test_read_errors_and_workspace(tmp_path):
    ctx = make_ctx(tmp_path / "ws")
    os.makedirs(ctx.cwd)
    (tmp_path / "secret").write_text("s")
    os.symlink(tmp_path / "secret", os.path.join(ctx.cwd, "link"))
    assert call(ctx, "read", {})[0] == {"error": "missing path"}
    assert call(ctx, "read", {"path": 5})[0] == {"error": "missing path"}
    res, err = call(ctx, "read", {"path": "link"})
    assert err and res["error"].startswith("path escapes the workspace: link resolves outside ")
    assert res["error"].endswith("File tools only operate on paths inside the workspace.")
    res, err = call(ctx, "read", {"path": "../secret"})
    assert err and "escapes" in res["error"]
    res, err = call(ctx, "read", {"path": "nope"})
    assert err and res["path"] == "nope"
    res, err = call(ctx, "read", {"path": "x", "offset": -1})
    assert res == {"error": "offset must be a non-negative integer, got -1"}
    res, err = call(ctx, "read", {"path": "x", "limit": "ten"})
    assert res == {"error": 'limit must be a non-negative integer, got "ten"'}


def test_home_expansion(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "h.txt").write_text("home\n")
    ctx = make_ctx(tmp_path)
    res, err = call(ctx, "read", {"path": "~/h.txt"})
    assert not err and res["content"] == "home\n"


def test_write_rules(tmp_path):
    ctx = make_ctx(tmp_path)
    res, err = call(ctx, "write", {"path": "new/dir/f.txt", "content": "one\n"})
    assert not err and res["written_bytes"] == 4
    assert res["diff"].startswith("--- a/new/dir/f.txt\n+++ b/new/dir/f.txt\n")
    # our own write refreshes the fingerprint, so a second write is allowed
    assert not call(ctx, "write", {"path": "new/dir/f.txt", "content": "two\n"})[1]
    (tmp_path / "old.txt").write_text("x")
    assert call(ctx, "write", {"path": "old.txt", "content": "y"})[0] == {"error": MSG_NOT_READ["write"]}
    call(ctx, "read", {"path": "old.txt"})
    (tmp_path / "old.txt").write_text("changed")
    assert call(ctx, "write", {"path": "old.txt", "content": "y"})[0] == {"error": MSG_CHANGED}
    assert call(ctx, "write", {"path": "a"})[0] == {"error": "missing content"}
    assert call(ctx, "write", {"content": "a"})[0] == {"error": "missing path"}
    assert os.path.exists(tmp_path / ".jucode" / ".gitignore")


def test_str_replace_and_alias(tmp_path):
    ctx = make_ctx(tmp_path)
    f = tmp_path / "s.py"
    f.write_text("a = 1\nb = 2\nb = 2\n")
    assert call(ctx, "edit", {"path": "s.py", "edits": [{"oldText": "a", "newText": "b"}]})[0] == {
        "error": MSG_NOT_READ["edit"]}
    call(ctx, "read", {"path": "s.py"})
    res, err = call(ctx, "edit", {"path": "s.py", "edits": [{"oldText": "b = 2", "newText": "c"}]})
    assert err and res == {"error": "oldText must match exactly once; found 2", "oldText": "b = 2"}
    res, err = call(ctx, "str_replace", {"path": "s.py", "edits": [
        {"oldText": "a = 1", "newText": "a = 10"}, {"oldText": "b = 2\nb", "newText": "B = 2\nb"}]})
    assert not err and res["edits"] == 2
    assert f.read_text() == "a = 10\nB = 2\nb = 2\n"
    assert "-a = 1\n+a = 10\n" in res["diff"] and res["diff"].startswith("--- a/s.py\n+++ b/s.py\n@@")
    errors = {
        "missing edits": {"path": "s.py"},
        "edits must not be empty": {"path": "s.py", "edits": []},
        "each edit requires oldText": {"path": "s.py", "edits": [{"newText": "x"}]},
        "each edit requires newText": {"path": "s.py", "edits": [{"oldText": "x"}]},
        "oldText must not be empty": {"path": "s.py", "edits": [{"oldText": "", "newText": "x"}]},
        "edits must not overlap": {"path": "s.py", "edits": [{"oldText": "a = 10\nB", "newText": "x"},
                                                            {"oldText": "B = 2\nb", "newText": "y"}]},
    }
    for text, args in errors.items():
        assert call(ctx, "str_replace", args)[0] == {"error": text}, text
    res, err = call(ctx, "str_replace", {"path": "s.py", "edits": [{"oldText": "zzz", "newText": "x"}]})
    assert res["error"] == "oldText must match exactly once; found 0"


def test_malformed_arguments_never_raise(tmp_path):
    ctx = make_ctx(tmp_path)
    res, err = call(ctx, "read", "{not json")
    assert err and res["error"].startswith("invalid JSON arguments: ")
    weird = [None, 1, "x", [], {}, {"a": 1}, 10 ** 30, -5, 1.5, True, "\0", "../../../etc/passwd"]
    from jucode.tools.registry import BUILTIN_NAMES
    for name in BUILTIN_NAMES:
        if name in ("bash", "exec_command", "web_fetch"):
            continue
        for value in weird:
            for key in ("path", "edits", "content", "patch", "offset", "limit", "pattern", "action",
                        "session_id", "paths", "id"):
                res, err = call(ctx, name, {key: value})
                assert isinstance(res, dict), (name, key, value)
    res, err = call(ctx, "read", {"path": "x", "limit": 10 ** 30})
    assert isinstance(res, dict)


def test_valid_utf8_with_nul_bytes_is_text_as_upstream(tmp_path):
    from jucode.tools.textcodec import decode_text

    assert decode_text(b"abc\x00def\n") == ("abc\x00def\n", "utf-8")
    assert decode_text(b"\x00\x01\xff\xfe\x00") is None          # not UTF-8: binary
