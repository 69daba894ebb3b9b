"""Opt-in: one turn through the engine against a real local model (llama.cpp server, SmolLM2).

Enable with JUCODE_REAL_LLM=1 after running ``bench/install-real-llm.sh`` (compiles
llama-cpp-python, ~5 min). The 135M model only proves the plumbing (streaming, usage quirks,
message conversion accepted by a real server), never answer quality.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parent.parent
DIR = Path(os.environ.get("JUCODE_REAL_LLM_DIR") or ROOT / ".ci-cache" / "real-llm")
PY = DIR / "venv" / "bin" / "python"
MODEL = DIR / "model.gguf"

pytestmark = [
    pytest.mark.real_llm,
    pytest.mark.skipif(os.environ.get("JUCODE_REAL_LLM") != "1", reason="set JUCODE_REAL_LLM=1 to run"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    if not PY.exists() or not MODEL.exists():
        pytest.fail(f"real model not installed in {DIR}: run bench/install-real-llm.sh")
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(PY), "-m", "llama_cpp.server", "--model", str(MODEL),
                                 "--model_alias", "smollm2", "--host", "127.0.0.1", "--port", str(port),
                                 "--n_ctx", "4096", "--n_threads", "2"],
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("llama server did not start:\n" + log.read_text(errors="replace")[-3000:])
                time.sleep(0.2)   # polling the port for readiness

        class Server:
            base_url = f"http://127.0.0.1:{port}/v1"
        yield Server
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def test_one_chat_turn_against_real_model(engine, llama):
    eng = engine({"protocol": "chat", "model": "smollm2",
                  "models": [{"name": "smollm2", "context_window": 4096, "max_output_tokens": 48}],
                  "retry_attempts": 0, "read_timeout_seconds": 240},
                 server=llama, api_key="sk-local-not-checked", wait=False)
    try:
        eng.wait_startup(timeout=30)
        m = eng.send({"op": "user_message", "content": "Say hello in one short sentence."})
        eng.wait_status("ready", start=m, timeout=300)
        errors = eng.since(m, "error")
        assert not errors, errors
        text = "".join(e["delta"] for e in eng.since(m, "assistant_delta"))
        calls = eng.since(m, "tool_start")
        assert text.strip() or calls, eng.types_since(m)
        assert eng.since(m, "usage"), "one usage event per model response, even without a usage chunk"
        assert eng.since(m, "context_usage")[-1]["tokens"] > 0
    finally:
        eng.close()
