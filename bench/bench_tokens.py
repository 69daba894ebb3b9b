"""Benchmark: count a ~200k-token context with jucode.tokens.Counter (target ≤ 0.1 s).

Run: .venv/bin/python bench/bench_tokens.py
"""

from __future__ import annotations

import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from jucode.tokens import Counter  # noqa: E402


def build_context(target_chars: int = 1_250_000) -> list:
    rnd = random.Random(7)
    words = ("def class return import self value items tokens context model stream error retry "
             "json request response tool call output path file line index buffer").split()
    items, size, n = [], 0, 0
    while size < target_chars:
        text = " ".join(rnd.choice(words) for _ in range(rnd.randint(50, 1500)))
        n += 1
        if n % 3 == 0:
            item = {"type": "function_call_output", "call_id": f"call_{n}", "output": text}
        elif n % 3 == 1:
            item = {"role": "user", "content": [{"type": "input_text", "text": text}]}
        else:
            item = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}
        items.append(item)
        size += len(text)
    return items


def main() -> int:
    t0 = time.perf_counter()
    c = Counter("gpt-5")
    c.load()
    load_s = time.perf_counter() - t0
    items = build_context()
    t1 = time.perf_counter()
    n = c.count_items(items)
    cold = time.perf_counter() - t1
    t2 = time.perf_counter()
    c.count_items(items)
    warm = time.perf_counter() - t2
    print(f"encoding={c.encoding} load={load_s:.3f}s items={len(items)} tokens={n} "
          f"count_cold={cold:.3f}s count_memo={warm:.3f}s target<=0.100s {'OK' if cold <= 0.1 else 'SLOW'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
