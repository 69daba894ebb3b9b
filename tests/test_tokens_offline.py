"""Offline token counting: verified packaged ranks, seeded tiktoken cache, no network, fallbacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from jucode import tokens
from jucode.tokendata import ENCODINGS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXT = "hello world — naïve café 🚀\n<|endoftext|> def f(x): return x * 2"


def _run(code: str, env_extra: dict) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT, **env_extra)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


NO_NET = """
import socket, json
def _no(*a, **k): raise RuntimeError("network access attempted")
socket.create_connection = _no
socket.socket.connect = _no
import requests
requests.get = _no
requests.Session.request = _no
"""


def test_counts_match_o200k_without_network(tmp_path):
    cache = tmp_path / "tk"
    res = _run(NO_NET + f"""
from jucode.tokens import Counter
c = Counter("gpt-5.5"); c.load()
import tiktoken
enc = tiktoken.get_encoding("o200k_base")
text = {TEXT!r}
item = {{"role": "user", "content": [{{"type": "input_text", "text": text}}]}}
print(json.dumps({{"enc": c.encoding, "tok": c.tokenizer, "hw": enc.encode("hello world"),
                  "n": c.count_text(text), "ref": len(enc.encode(text, allowed_special="all")),
                  "items": c.count_items([item, item]),
                  "items_ref": 2 * len(enc.encode(json.dumps(item, separators=(",", ":"), ensure_ascii=False),
                                                  allowed_special="all")),
                  "files": sorted(__import__("os").listdir({str(cache)!r}))}}))
""", {"TIKTOKEN_CACHE_DIR": str(cache)})
    assert res["enc"] == "o200k_base" and res["tok"] == "gpt-5.5"
    assert res["hw"] == [24912, 2375]
    assert res["n"] == res["ref"]
    assert res["items"] == res["items_ref"]
    assert ENCODINGS["o200k_base"][1] in res["files"]


def test_corrupt_cache_is_replaced_and_cl100k_models(tmp_path):
    cache = tmp_path / "tk"
    cache.mkdir()
    (cache / ENCODINGS["o200k_base"][1]).write_bytes(b"garbage")
    res = _run(NO_NET + """
from jucode.tokens import Counter
c = Counter("gpt-4o"); c.load()
g = Counter("gpt-4"); g.load()
print(json.dumps({"enc": c.encoding, "n": c.count_text("hello world"), "g": g.encoding, "gt": g.tokenizer,
                  "gn": g.count_text("hello world")}))
""", {"TIKTOKEN_CACHE_DIR": str(cache)})
    assert res == {"enc": "o200k_base", "n": 2, "g": "cl100k_base", "gt": "gpt-4", "gn": 2}


def test_estimate_fallback_when_no_ranks(tmp_path):
    res = _run(NO_NET + """
import jucode.tokendata as td
td.packaged_path = lambda name: "/nonexistent/" + name
import jucode.tokens as t
t.packaged_path = td.packaged_path
c = t.Counter("gpt-5"); c.load()
print(json.dumps({"enc": c.encoding, "n": c.count_text("x" * 40), "items": c.count_items([{"a": "b"}])}))
""", {"TIKTOKEN_CACHE_DIR": str(tmp_path / "empty"), "JUCODE_TOKEN_CACHE_DIR": str(tmp_path / "empty2")})
    assert res == {"enc": "estimate", "n": 10, "items": 3}


def test_tokenizer_names():
    assert tokens.tokenizer_name("gpt-5.5") == "gpt-5.5"
    assert tokens.tokenizer_name("o3") == "o3"
    assert tokens.tokenizer_name("claude-sonnet-4-5") == "gpt-5"
    assert tokens.tokenizer_name("qwen3-coder:30b") == "gpt-5"
    assert tokens.tokenizer_name("gpt-oss-20b") == "gpt-5"
    assert tokens.tokenizer_name("codex-mini-latest") == "gpt-5"
    assert tokens.estimate_tokens("abcdefgh") == 2


def test_load_async_and_bench_speed():
    c = tokens.Counter("gpt-5")
    c.load_async()
    item = {"type": "function_call_output", "call_id": "c", "output": "word " * 4000}
    assert c.count_items([item]) > 3000   # waits for the background load
    assert c.ready and c.encoding == "o200k_base"


def test_startup_import_is_light():
    code = "import sys, jucode.tokens, jucode.llm.factory, jucode.llm.catalog, jucode.llm.retry; " \
           "print([m for m in ('tiktoken', 'openai', 'requests', 'httpx2') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=ROOT),
                         capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_upper_bound_never_undercounts():
    """The bound a cold turn trusts instead of waiting for the tokenizer must never be below
    the exact count, for any text (byte-level BPE: one token covers at least one byte)."""
    c = tokens.Counter("gpt-5.5")
    c.load()
    assert c.encoding == "o200k_base"
    samples = [
        [{"role": "user", "content": "hello world"}],
        [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "ünïcödé ✓ 漢字 🙂" * 50}]}],
        [{"type": "function_call_output", "call_id": "c1", "output": "<|endoftext|><|fim_prefix|>" * 20}],
        [{"role": "assistant", "content": "\x00\x01 \t\n" * 100}, {"k": list(range(300))}],
        [],
    ]
    for items in samples:
        assert c.count_items(items) <= c.upper_bound(items), items
