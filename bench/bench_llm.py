"""Benchmark the engine as a front-end sees it: startup, turn latency, delta latency, memory, CPU.

Run: .venv/bin/python bench/bench_llm.py [--runs N] [--turns N] [--no-prewarm]

Everything goes through the real ``jucode.py serve`` subprocess and the scripted fake model
server (loopback). Figures are medians over several runs; the 2-core machine's load shows up
directly in the numbers, so run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from fakeserver import FakeModelServer  # noqa: E402
from harness import EngineProc  # noqa: E402


class TimedServer(FakeModelServer):
    """Records the wall-clock time each SSE frame was flushed, to time delta → stdout latency."""

    def __init__(self):
        super().__init__()
        self.sent: list = []         # (time.time(), frame payload str)
        # Without TCP_NODELAY the server's small header/chunk writes meet the client's delayed
        # ACK and every turn waits ~40 ms: an artefact of the fake server, not of the engine.
        self._httpd.RequestHandlerClass.disable_nagle_algorithm = True

    def _stream(self, h, events, reply):
        h.send_response(200)
        h.send_header("content-type", "text/event-stream; charset=utf-8")
        h.send_header("transfer-encoding", "chunked")
        h.end_headers()
        h.wfile.flush()
        import json
        gap = reply.get("gap", 0)
        for i, (name, data) in enumerate(events):
            if gap and i:
                time.sleep(gap)     # bench pacing only (tests never sleep)
            payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
            frame = ((f"event: {name}\n" if name else "") + f"data: {payload}\n\n").encode()
            h.wfile.write(b"%x\r\n" % len(frame) + frame + b"\r\n")
            h.wfile.flush()
            self.sent.append((time.time(), payload))
        h.wfile.write(b"0\r\n\r\n")
        h.wfile.flush()


class TimedEngine(EngineProc):
    """EngineProc that stamps every stdout line with its arrival time."""

    def __init__(self, *a, **kw):
        self.times: list = []
        self.spawned = time.time()
        super().__init__(*a, **kw)

    def _read(self) -> None:
        for line in self.proc.stdout:
            now = time.time()
            with self.cond:
                self.times.append(now)
            import json
            with self.cond:
                self.raw_lines.append(line)
                try:
                    self.events.append(json.loads(line))
                except ValueError:
                    self.events.append({"type": "__non_json__"})
                self.cond.notify_all()
        with self.cond:
            self.eof = True
            self.cond.notify_all()

    def status(self, key: str) -> int:
        """A /proc/<pid>/status field in KiB (VmRSS, VmHWM)."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
        return 0

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def mb(kib: int) -> float:
    return kib / 1024


def turn(eng, server, reply, content="hi") -> float:
    server.script(reply)
    t = time.time()
    m = eng.send({"op": "user_message", "content": content})
    ev = eng.wait_status("ready", start=m, timeout=60)
    idx = eng.events.index(ev, m)
    return eng.times[idx] - t


def cold_first_turn(config: dict) -> float:
    """A message sent the moment the startup batch is out: the warm-up has not finished yet."""
    server = TimedServer()
    eng = TimedEngine(Path(tempfile.mkdtemp(prefix="bench-cold-")), server, config=dict(config))
    try:
        eng.wait_startup(timeout=30)
        return turn(eng, server, {"text": "first"}) * 1000
    finally:
        eng.close()
        server.close()


def one_run(turns: int, config: dict) -> dict:
    server = TimedServer()
    tmp = Path(tempfile.mkdtemp(prefix="bench-llm-"))
    eng = TimedEngine(tmp, server, config=dict(config))
    out = {}
    try:
        eng.wait_startup(timeout=30)
        hello = eng.times[0] - eng.spawned
        end = eng.times[[e.get("type") for e in eng.events].index("mcp_servers")] - eng.spawned
        out.update(hello=hello * 1000, batch=end * 1000)
        out["rss_startup"] = mb(eng.status("VmRSS"))
        t_settle = time.monotonic()
        while time.monotonic() - t_settle < 1.0:   # settle: background warm-up, if any
            time.sleep(0.05)
        out["rss_settled"] = mb(eng.status("VmRSS"))
        out["first_turn"] = turn(eng, server, {"text": "first"}) * 1000
        warm = [turn(eng, server, {"text": "ok"}) * 1000 for _ in range(20)]
        out["warm_turn"] = statistics.median(warm)
        # delta latency: distinct deltas, paced so each is its own frame
        text = "".join(f"<{i:03d}>" for i in range(40))
        n_before = len(server.sent)
        m = eng.send({"op": "user_message", "content": "stream"})
        server.script({"text": text, "chunk": 5, "gap": 0.01})
        eng.wait_status("ready", start=m, timeout=30)
        sent = {}
        import json
        for ts, payload in server.sent[n_before:]:
            try:
                d = json.loads(payload)
            except ValueError:
                continue
            if d.get("type") == "response.output_text.delta":
                sent[d["delta"]] = ts
        lat = []
        for i in range(m, len(eng.events)):
            e = eng.events[i]
            if e.get("type") == "assistant_delta" and e["delta"] in sent:
                lat.append((eng.times[i] - sent[e["delta"]]) * 1000)
        out["delta_latency"] = statistics.median(lat) if lat else float("nan")
        out["delta_n"] = len(lat)
        for _ in range(max(0, turns - 22)):
            turn(eng, server, {"text": "more text " * 20, "reasoning": "r" * 100}, content="go on " * 30)
        out["peak_rss"] = mb(eng.status("VmHWM"))
        c0, t0 = eng.cpu_seconds(), time.monotonic()
        while time.monotonic() - t0 < 5.0:
            time.sleep(0.25)
        out["idle_cpu"] = 100 * (eng.cpu_seconds() - c0) / (time.monotonic() - t0)
    finally:
        eng.close()
        server.close()
    out["first_over_warm"] = out["first_turn"] - out["warm_turn"]
    out["cold_first_over_warm"] = cold_first_turn(config) - out["warm_turn"]
    return out


def count_200k() -> float:
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_tokens import build_context
    from jucode.tokens import Counter
    items = build_context()
    times = []
    total = 0
    for _ in range(5):
        c = Counter("gpt-5")
        c.load()
        t = time.perf_counter()
        total = c.count_items(items)
        times.append(time.perf_counter() - t)
    return statistics.median(times), total


ROWS = [  # key, label, unit, target, lower-is-better
    ("hello", "spawn → hello", "ms", 60),
    ("batch", "spawn → end of startup batch", "ms", 120),
    ("rss_startup", "RSS right after startup batch", "MB", 30),
    ("rss_settled", "RSS 1 s after startup", "MB", None),
    ("warm_turn", "warm one-line turn (median of 20)", "ms", 30),
    ("first_turn", "first turn after startup", "ms", None),
    ("first_over_warm", "first turn (1 s after startup) minus warm", "ms", 400),
    ("cold_first_over_warm", "first turn sent at startup minus warm", "ms", None),
    ("delta_latency", "server delta → stdout event (median)", "ms", 2),
    ("peak_rss", "peak RSS (VmHWM) over the turns", "MB", 110),
    ("idle_cpu", "idle CPU over 5 s", "%", 1),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--turns", type=int, default=50)
    ap.add_argument("--no-prewarm", action="store_true",
                    help="config prewarm=false: no background tokenizer/SDK load after startup")
    args = ap.parse_args()
    config = {"prewarm": False} if args.no_prewarm else {}
    runs = [one_run(args.turns, config) for _ in range(args.runs)]
    print(f"{'metric':42} {'median':>9} {'min':>9} {'max':>9}  target")
    for key, label, unit, target in ROWS:
        vals = [r[key] for r in runs]
        med = statistics.median(vals)
        ok = "" if target is None else ("ok" if med <= target else "OVER")
        tgt = "" if target is None else f"≤ {target} {unit}"
        print(f"{label:42} {med:9.1f} {min(vals):9.1f} {max(vals):9.1f}  {unit:3} {tgt} {ok}")
    print(f"(delta samples per run: {[r['delta_n'] for r in runs]}; turns per run: {args.turns})")
    secs, total = count_200k()
    print(f"{'count ' + str(total) + '-token context (median of 5)':42} {secs * 1000:9.1f} ms  ≤ 100 ms "
          f"{'ok' if secs <= 0.1 else 'OVER'}")
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
