"""Quick performance check for the builtin tools; prints figures (not a test)."""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from jucode.tools.base import ToolContext  # noqa: E402
from jucode.tools.registry import lookup, run_tool  # noqa: E402


def _call(ctx, name, args):
    return run_tool(lookup(name), json.dumps(args), ctx)


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        d = os.path.realpath(d)
        ctx = ToolContext(cwd=d, interrupt=threading.Event())
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t = time.perf_counter()
        res, _ = _call(ctx, "bash", {"command": "head -c 200000000 /dev/zero | tr '\\0' 'x' | fold -w 100"})
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(f"bash printing 200 MB: {time.perf_counter() - t:.1f} s, RSS growth "
              f"{(after - before) / 1024:.1f} MB (target <= 20), stdout kept {len(res['stdout'])} chars")
        with open(os.path.join(d, "big.txt"), "w") as fh:
            fh.write("".join(f"line {i} some text to pad it out a little bit more\n" for i in range(100_000)))
        size = os.path.getsize(os.path.join(d, "big.txt"))
        t = time.perf_counter()
        res, _ = _call(ctx, "read", {"path": "big.txt", "limit": 200})
        print(f"read {size / 1e6:.1f} MB limit 200: {(time.perf_counter() - t) * 1000:.1f} ms "
              f"(target <= 50)")
        with open(os.path.join(d, "mid.txt"), "w") as fh:
            fh.write("".join(f"value_{i} = {i}\n" for i in range(10_000)))
        res, _ = _call(ctx, "read", {"path": "mid.txt", "offset": 5000, "limit": 1})
        anchor = res["hashlines"].split(":", 1)[0]
        t = time.perf_counter()
        res, err = _call(ctx, "hashline_edit", {"path": "mid.txt", "edits": [
            {"op": "replace", "pos": anchor, "lines": ["changed = 1"]}]})
        assert not err, res
        print(f"hashline_edit on 10,000 lines: {(time.perf_counter() - t) * 1000:.1f} ms (target <= 50)")



if __name__ == "__main__":
    main()
