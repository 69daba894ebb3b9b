"""``jucode acp``: our own JSON-RPC client and the real ``acpx`` client against the real engine,
with replay scripts standing in for the model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENTRY = ROOT / "jucode.py"
ACPX = ROOT / ".ci-cache" / "acp" / "node_modules" / "acpx" / "dist" / "cli.js"

SCRIPT = {
    "pace_ms": 0, "chunk": 5,
    "responses": [
        {"match": "hello", "after": "user", "steps": [{"reasoning": "thinking it over"}, {"text": "Hi from replay!"}]},
        {"match": "run", "after": "user", "steps": [
            {"text": "Running it."},
            {"tool": "bash", "arguments": {"command": "echo acp-ran > ran.txt"}, "call_id": "call_7"}]},
        {"match": "run", "after": "tool", "steps": [{"text": "Finished."}]},
        {"match": "slow", "after": "user", "steps": [
            {"text": "Starting a very long answer"}, {"delay_ms": 20000}, {"text": "never"}]},
        {"match": "plan", "after": "user", "steps": [
            {"tool": "update_plan", "arguments": {"plan": [{"step": "one", "status": "completed"},
                                                           {"step": "two", "status": "in_progress"}]}}]},
        {"match": "plan", "after": "tool", "steps": [{"text": "Planned."}]},
        {"match": "mcp", "after": "user", "steps": [
            {"tool": "mcp__probe__echo", "arguments": {"text": "via the editor's server"}, "call_id": "call_m"}]},
        {"match": "mcp", "after": "tool", "steps": [{"text": "Echoed."}]},
    ],
}


def _env(tmp: Path) -> dict:
    home = tmp / "home"
    (home / ".jucode").mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "JUCODE_", "ANTHROPIC_"))}
    env.update({"HOME": str(home), "JUCODE_HOME": str(home / ".jucode")})
    return env


def _script(tmp: Path) -> str:
    p = tmp / "script.json"
    p.write_text(json.dumps(SCRIPT))
    return str(p)


class AcpClient:
    """A minimal ACP client: sends requests, collects notifications, answers permission asks."""

    def __init__(self, tmp: Path, permission: str = "allow_once"):
        self.work = tmp / "work"
        self.work.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen([sys.executable, str(ENTRY), "acp", "--replay", _script(tmp)],
                                     cwd=str(self.work), env=_env(tmp), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.permission = permission
        self.messages: list[dict] = []
        self.cond = threading.Condition()
        self.next_id = 100
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            msg = json.loads(line)                 # every line must be JSON
            assert msg.get("jsonrpc") == "2.0"
            if msg.get("method") == "session/request_permission":
                outcome = ({"outcome": "cancelled"} if self.permission == "cancelled"
                           else {"outcome": "selected", "optionId": self.permission})
                self._write({"jsonrpc": "2.0", "id": msg["id"], "result": {"outcome": outcome}})
            with self.cond:
                self.messages.append(msg)
                self.cond.notify_all()

    def _write(self, msg: dict) -> None:
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def send(self, method: str, params: dict) -> int:
        self.next_id += 1
        self._write({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def notify(self, method: str, params: dict) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    def wait(self, pred, timeout: float = 10.0) -> dict:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for m in self.messages:
                    if pred(m):
                        return m
                left = deadline - time.monotonic()
                assert left > 0, f"timed out; got {self.messages[-10:]}"
                self.cond.wait(left)

    def result(self, rid: int, timeout: float = 10.0) -> dict:
        return self.wait(lambda m: m.get("id") == rid and "method" not in m, timeout)

    def call(self, method: str, params: dict, timeout: float = 10.0) -> dict:
        return self.result(self.send(method, params), timeout)

    def updates(self, kind: str | None = None) -> list[dict]:
        with self.cond:
            ups = [m["params"]["update"] for m in self.messages if m.get("method") == "session/update"]
        return [u for u in ups if kind is None or u["sessionUpdate"] == kind]

    def start_session(self) -> str:
        init = self.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})["result"]
        assert init["protocolVersion"] == 1 and init["agentCapabilities"]["loadSession"] is True
        return self.call("session/new", {"cwd": str(self.work), "mcpServers": []})["result"]["sessionId"]

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


@pytest.fixture
def client_factory(tmp_path):
    made = []

    def make(**kw):
        c = AcpClient(tmp_path, **kw)
        made.append(c)
        return c
    yield make
    for c in made:
        c.close()


def text_of(updates) -> str:
    return "".join(u["content"]["text"] for u in updates)


def test_prompt_streams_chunks_and_ends_turn(client_factory):
    c = client_factory()
    sid = c.start_session()
    r = c.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]})
    assert r["result"] == {"stopReason": "end_turn"}
    assert text_of(c.updates("agent_thought_chunk")) == "thinking it over"
    assert text_of(c.updates("agent_message_chunk")) == "Hi from replay!"
    assert all(m["params"]["sessionId"] == sid for m in c.messages if m.get("method") == "session/update")


def test_permission_allow_runs_the_tool(client_factory):
    c = client_factory(permission="allow_once")
    sid = c.start_session()
    r = c.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "run it"}]})
    assert r["result"]["stopReason"] == "end_turn"
    ask = c.wait(lambda m: m.get("method") == "session/request_permission")
    assert ask["params"]["toolCall"]["toolCallId"] == "call_7"
    assert {o["kind"] for o in ask["params"]["options"]} == {"allow_once", "allow_always", "reject_once"}
    calls = c.updates("tool_call")
    assert calls[0]["toolCallId"] == "call_7" and calls[0]["kind"] == "execute"
    final = [u for u in c.updates("tool_call_update") if u["toolCallId"] == "call_7"][-1]
    assert final["status"] == "completed"
    assert (c.work / "ran.txt").read_text().strip() == "acp-ran"


def test_permission_reject_denies(client_factory):
    c = client_factory(permission="reject_once")
    sid = c.start_session()
    r = c.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "run it"}]})
    assert r["result"]["stopReason"] == "end_turn"
    final = [u for u in c.updates("tool_call_update") if u["toolCallId"] == "call_7"][-1]
    assert final["status"] == "failed" and "denied by user" in final["content"][0]["content"]["text"]
    assert not (c.work / "ran.txt").exists()


def test_cancel_stops_a_streaming_turn(client_factory):
    c = client_factory()
    sid = c.start_session()
    rid = c.send("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "slow please"}]})
    c.wait(lambda m: m.get("method") == "session/update"
           and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
    t0 = time.monotonic()
    c.notify("session/cancel", {"sessionId": sid})
    assert c.result(rid, timeout=5)["result"] == {"stopReason": "cancelled"}
    assert time.monotonic() - t0 < 3
    assert "never" not in text_of(c.updates("agent_message_chunk"))
    # The session still works afterwards.
    r = c.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hello again"}]})
    assert r["result"]["stopReason"] == "end_turn"


def test_set_mode_and_plan_updates(client_factory):
    c = client_factory()
    sid = c.start_session()
    assert c.call("session/set_mode", {"sessionId": sid, "modeId": "full-access"})["result"] == {}
    c.wait(lambda m: m.get("method") == "session/update"
           and m["params"]["update"].get("currentModeId") == "full-access")
    bad = c.call("session/set_mode", {"sessionId": sid, "modeId": "yolo"})
    assert bad["error"]["code"] == -32602
    r = c.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "plan it"}]})
    assert r["result"]["stopReason"] == "end_turn"
    plans = c.updates("plan")
    if not plans:
        pytest.xfail("update_plan is not offered by this build (goals host missing)")
    assert plans[-1]["entries"] == [{"content": "one", "priority": "medium", "status": "completed"},
                                    {"content": "two", "priority": "medium", "status": "in_progress"}]


FAULT = str(ROOT / "tests" / "mcp_fault_server.py")


def test_editor_mcp_servers_from_session_new_serve_the_first_prompt(client_factory):
    c = client_factory(permission="allow_once")
    init = c.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})["result"]
    assert init["agentCapabilities"]["mcpCapabilities"] == {"http": True, "sse": False}
    servers = [{"name": "probe", "command": sys.executable, "args": [FAULT, "good"],
                "env": [{"name": "PROBE_FLAG", "value": "1"}]},
               {"type": "sse", "name": "legacy", "url": "http://127.0.0.1:9/sse", "headers": []}]
    sid = c.call("session/new", {"cwd": str(c.work), "mcpServers": servers}, timeout=20)["result"]["sessionId"]
    # session/new answered once the server connected: the very first prompt can use its tools
    r = c.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "mcp echo"}]}, timeout=20)
    assert r["result"]["stopReason"] == "end_turn"
    final = [u for u in c.updates("tool_call_update") if u["toolCallId"] == "call_m"][-1]
    assert final["status"] == "completed", final
    assert "via the editor's server" in final["content"][0]["content"]["text"]
    assert text_of(c.updates("agent_message_chunk")) == "Echoed."
    # the editor's servers belong to the session: nothing is written to config.json
    cfg = c.work.parent / "home" / ".jucode" / "config.json"
    assert not cfg.exists() or "probe" not in cfg.read_text()


def test_malformed_mcp_servers_are_invalid_params(client_factory):
    c = client_factory()
    c.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    bad = [{"name": "x"}, {"command": "y"}, {"name": "x", "command": "y", "args": "notalist"},
           {"name": "x", "command": "y", "env": {"A": "1"}}, {"type": "http", "name": "h"}]
    for entry in bad:
        err = c.call("session/new", {"cwd": str(c.work), "mcpServers": [entry]})["error"]
        assert err["code"] == -32602, (entry, err)
    assert c.call("session/new", {"cwd": str(c.work), "mcpServers": "nope"})["error"]["code"] == -32602


def test_errors_and_session_load(tmp_path, client_factory):
    c = client_factory()
    sid = c.start_session()
    assert c.call("nope/nothing", {})["error"]["code"] == -32601
    assert c.call("session/prompt", {"sessionId": "missing", "prompt": []})["error"]["code"] == -32602
    assert c.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]})["result"]
    c.close()
    # A second process loads the journal and replays it before answering.
    c2 = client_factory()
    c2.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    rid = c2.send("session/load", {"sessionId": sid, "cwd": str(c2.work), "mcpServers": []})
    res = c2.result(rid)
    assert "modes" in res["result"]
    with c2.cond:
        before = [m for m in c2.messages[:c2.messages.index(res)] if m.get("method") == "session/update"]
    kinds = [m["params"]["update"]["sessionUpdate"] for m in before]
    assert "user_message_chunk" in kinds and "agent_message_chunk" in kinds
    assert text_of([m["params"]["update"] for m in before
                    if m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"]) == "Hi from replay!"
    assert c2.call("session/load", {"sessionId": "nope", "cwd": str(c2.work)})["error"]["code"] == -32602


@pytest.mark.slow
@pytest.mark.skipif(not ACPX.exists() or shutil.which("node") is None,
                    reason="acpx not installed: run .ci/install-acp.sh")
def test_acpx_completes_a_turn_with_a_permission_request(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    agent = tmp_path / "agent.sh"
    agent.write_text(f"#!/bin/sh\nexec '{sys.executable}' '{ENTRY}' acp --replay '{_script(tmp_path)}'\n")
    agent.chmod(0o755)
    env = _env(tmp_path)
    env["ACPX_HOME"] = str(tmp_path / "acpx")
    p = subprocess.run(["node", str(ACPX), "--agent", str(agent), "--cwd", str(work), "--approve-all",
                        "--format", "json", "--ttl", "0", "exec", "please run it"],
                       cwd=str(work), env=env, capture_output=True, timeout=90)
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    msgs = [json.loads(line) for line in p.stdout.decode().splitlines() if line.startswith("{")]
    asks = [m for m in msgs if m.get("method") == "session/request_permission"]
    assert asks and asks[0]["params"]["toolCall"]["toolCallId"] == "call_7"
    # ids are per direction: the client's answer is the response carrying an outcome
    answers = [m for m in msgs if m.get("id") == asks[0]["id"] and "outcome" in (m.get("result") or {})]
    assert answers[0]["result"]["outcome"]["optionId"] == "allow_once"
    assert any(m.get("result", {}).get("stopReason") == "end_turn" for m in msgs if isinstance(m.get("result"), dict))
    assert (work / "ran.txt").read_text().strip() == "acp-ran"
