"""context_usage.tokens equals tiktoken's o200k count of the projected items, with no network.

The engine runs with an empty TIKTOKEN_CACHE_DIR and every proxy variable pointing at a dead
loopback port, so any attempt by tiktoken to download would fail loudly instead of silently
succeeding on a networked CI machine.
"""

from __future__ import annotations

import orjson

FIXED = "Count me exactly: naïve café 🚀 — 漢字 <|endoftext|> def f(x): return x * 2\n" * 3
DEAD = "http://127.0.0.1:9"


def test_context_tokens_match_o200k_offline(engine, tmp_path, server, monkeypatch):
    cache = tmp_path / "empty-tiktoken-cache"
    cache.mkdir()
    env = {"TIKTOKEN_CACHE_DIR": str(cache), "HTTPS_PROXY": DEAD, "HTTP_PROXY": DEAD,
           "https_proxy": DEAD, "http_proxy": DEAD, "ALL_PROXY": DEAD, "NO_PROXY": "127.0.0.1,localhost"}
    eng = engine({"model": "gpt-5.4"}, env=env, wait=False)
    try:
        eng.wait_startup()
        server.script({"text": "ok"})
        m = eng.send({"op": "user_message", "content": FIXED})
        eng.wait_status("ready", start=m, timeout=30)
        first = eng.wait_for("context_usage", start=m)      # counted before the reply: the user item
    finally:
        eng.close()
    assert "network" not in eng.stderr_text().lower()
    # the engine seeded the empty cache with verified ranks, so tiktoken never reached out
    assert any(cache.iterdir())
    import tiktoken

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    for var in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
        monkeypatch.setenv(var, DEAD)
    enc = tiktoken.Encoding(**__import__("tiktoken_ext.openai_public").openai_public.o200k_base())
    items = server.requests[0]["body"]["input"]
    assert items[-1]["role"] == "user"
    expected = sum(len(enc.encode(orjson.dumps(i).decode(), allowed_special="all")) for i in items)
    assert first["tokens"] == expected
    assert first["tokenizer"] == "gpt-5.4"
    assert expected != sum((len(orjson.dumps(i).decode()) + 3) // 4 for i in items)  # not the estimate
