"""The memory trim applied after tiktoken builds an encoding must not change a single count."""

from __future__ import annotations

import os

import pytest

from jucode import heap, tokens

TEXTS = [
    "hello world",
    "naïve café 🚀 — ünïcödé ∑ 漢字かな 한국어",
    "<|endoftext|> special text and <|fim_prefix|> markers",
    "def f(x):\n    return [i ** 2 for i in range(x)]  # comment\n\t\ttabs\r\n",
    "a" * 5000,
    " ".join(str(i) for i in range(2000)),
]


def test_slim_encoding_counts_and_decodes_identically(tmp_path, monkeypatch):
    import tiktoken
    from tiktoken_ext import openai_public

    d = tokens.seed_cache("o200k_base", str(tmp_path))
    assert d == str(tmp_path)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", d)
    full = tiktoken.Encoding(**openai_public.o200k_base())
    slim = tiktoken.Encoding(**openai_public.o200k_base())
    tokens._slim(slim)
    assert slim._mergeable_ranks is None and full._mergeable_ranks is not None
    for t in TEXTS:
        a = full.encode(t, allowed_special="all")
        b = slim.encode(t, allowed_special="all")
        assert a == b
        assert slim.decode(b) == t
    assert slim.encode_batch(TEXTS, allowed_special="all") == full.encode_batch(TEXTS, allowed_special="all")


def test_engine_encoding_is_slimmed_and_heap_trim_never_raises():
    enc = tokens.load_encoding("o200k_base")
    if enc is None:
        pytest.skip("packaged ranks missing (run .ci/install-llm.sh)")
    assert enc._mergeable_ranks is None
    assert enc.encode("hello world") == [24912, 2375]
    assert heap.trim_heap() in (True, False)


def test_slim_can_be_disabled(monkeypatch):
    class Fake:
        _mergeable_ranks = {b"a": 0}
    monkeypatch.setenv("JUCODE_TOKENS_NO_SLIM", "1")
    f = Fake()
    tokens._slim(f)
    assert f._mergeable_ranks == {b"a": 0}
    monkeypatch.delenv("JUCODE_TOKENS_NO_SLIM")
    tokens._slim(f)
    assert f._mergeable_ranks is None
    tokens._slim(object())      # an object without the attribute is left alone, no exception


@pytest.mark.skipif(not os.path.exists("/lib/x86_64-linux-gnu/libc.so.6") and not os.path.exists("/usr/lib/libc.so.6"),
                    reason="glibc only")
def test_single_arena_applies_once_and_defers_to_an_explicit_malloc_arena_max():
    import subprocess
    import sys

    code = "from jucode import heap; print(heap.single_arena())"
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    mine = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True)
    theirs = subprocess.run([sys.executable, "-c", code], env={**env, "MALLOC_ARENA_MAX": "4"}, cwd=root,
                            capture_output=True, text=True)
    assert (mine.stdout.strip(), theirs.stdout.strip()) == ("True", "False")
