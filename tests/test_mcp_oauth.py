"""HTTP MCP OAuth (jucode-engine.md §5.18, §10.4–10.5): the Bearer comes from ``auth.json``
``mcp_servers.<name>``; it is refreshed 60 s before ``access_expires_at`` or after a 401 via
``grant_type=refresh_token`` to the entry's ``oauth.token_url``, and written back atomically
with mode 0600. Tokens never show up in events, errors or logs.

A tiny stdlib HTTP server on 127.0.0.1 plays both the MCP endpoint (``/mcp``, JSON replies,
bearer required) and the token endpoint (``/token``).
"""

import json
import os
import stat
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from test_mcp_engine import server_state

from jucode.mcp.manager import McpManager
from jucode.mcp.oauth import McpAuthError, McpTokenStore, parse_expiry


class AuthMcpServer:
    """``/mcp`` accepts only ``Bearer <self.valid>``; ``/token`` trades ``self.refresh`` for a
    new access token (``tok-<n>``) and a rotated refresh token."""

    def __init__(self):
        self.valid = "tok-0"
        self.refresh = "ref-0"
        self.issued = 0
        self.token_requests: list = []
        self.seen_auth: list = []
        self.fail_refresh = False
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, code, payload=None, ctype="application/json"):
                body = b"" if payload is None else json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_DELETE(self):
                self._send(200)

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path == "/token":
                    form = dict(urllib.parse.parse_qsl(raw.decode()))
                    outer.token_requests.append(form)
                    if outer.fail_refresh or form.get("refresh_token") != outer.refresh:
                        return self._send(400, {"error": "invalid_grant"})
                    outer.issued += 1
                    outer.valid, outer.refresh = f"tok-{outer.issued}", f"ref-{outer.issued}"
                    return self._send(200, {"access_token": outer.valid, "token_type": "Bearer",
                                            "refresh_token": outer.refresh, "expires_in": 3600})
                auth = self.headers.get("Authorization")
                outer.seen_auth.append(auth)
                if auth != f"Bearer {outer.valid}":
                    return self._send(401, {"error": "invalid_token"})
                msg = json.loads(raw)
                if "id" not in msg:
                    return self._send(202)
                method = msg["method"]
                if method == "initialize":
                    result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                              "serverInfo": {"name": "auth-test", "version": "1"}}
                elif method == "tools/list":
                    result = {"tools": [{"name": "whoami", "description": "Who is calling",
                                         "inputSchema": {"type": "object"}}]}
                elif method == "tools/call":
                    result = {"content": [{"type": "text", "text": "caller ok"}]}
                else:
                    return self._send(200, {"jsonrpc": "2.0", "id": msg["id"],
                                            "error": {"code": -32601, "message": "nope"}})
                self._send(200, {"jsonrpc": "2.0", "id": msg["id"], "result": result})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def expire(self):
        """The current access token stops working (the refresh token still does)."""
        self.valid = "tok-expired-" + self.valid

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def mcp():
    s = AuthMcpServer()
    yield s
    s.close()


def entry(mcp, **extra):
    return {"name": "remote", "transport": "http", "url": mcp.url + "/mcp",
            "oauth": {"client_id": "cli-1", "token_url": mcp.url + "/token", "scope": "mcp"},
            "timeout_seconds": 5, **extra}


def write_auth(profile, expires_at, access="tok-0", refresh="ref-0"):
    path = profile / "auth.json"
    data = {"providers": {"openai": "sk-keep"},
            "mcp_servers": {"remote": {"access_token": access, "refresh_token": refresh,
                                       "access_expires_at": expires_at}}}
    path.write_text(json.dumps(data))
    return path


def wait_state(mgr, state, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if mgr.state_of("remote") == state:
            return
        time.sleep(0.02)
    raise AssertionError(f"remote is {mgr.state_of('remote')}, wanted {state}: {mgr.servers_view()}")


@pytest.fixture
def manager_for(tmp_path):
    made = []

    def _make(mcp, **extra):
        events: list = []
        mgr = McpManager([entry(mcp, **extra)], str(tmp_path), events.append,
                         token_store=McpTokenStore(tmp_path))
        made.append(mgr)
        return mgr, events
    yield _make
    for m in made:
        m.close()


def test_bearer_sent_and_401_refreshes_once(tmp_path, mcp, manager_for):
    auth_path = write_auth(tmp_path, int(time.time()) + 3600)
    mgr, events = manager_for(mcp)
    wait_state(mgr, "connected")
    assert set(mcp.seen_auth) == {"Bearer tok-0"} and mcp.token_requests == []

    mcp.expire()                                   # the server now rejects tok-0
    assert mgr.run_tool("mcp__remote__whoami", {}) == {"output": "caller ok"}
    assert mcp.token_requests == [{"grant_type": "refresh_token", "refresh_token": "ref-0",
                                   "client_id": "cli-1", "scope": "mcp"}]
    assert mcp.seen_auth[-2:] == ["Bearer tok-0", "Bearer tok-1"]     # 401, then the retry

    saved = json.loads(auth_path.read_text())
    assert saved["providers"] == {"openai": "sk-keep"}               # other keys kept
    mine = saved["mcp_servers"]["remote"]
    assert mine["access_token"] == "tok-1" and mine["refresh_token"] == "ref-1"
    assert abs(mine["access_expires_at"] - (time.time() + 3600)) < 60
    assert stat.S_IMODE(os.stat(auth_path).st_mode) == 0o600
    # later calls use the stored token without refreshing again
    assert mgr.run_tool("mcp__remote__whoami", {}) == {"output": "caller ok"}
    assert len(mcp.token_requests) == 1
    assert "tok-" not in json.dumps(events) and "ref-" not in json.dumps(events)


def test_refresh_before_expiry_margin(tmp_path, mcp, manager_for):
    auth_path = write_auth(tmp_path, "2000-01-01T00:00:00Z")   # RFC 3339 style is kept
    mgr, _ = manager_for(mcp)
    wait_state(mgr, "connected")
    assert len(mcp.token_requests) == 1
    assert "Bearer tok-0" not in mcp.seen_auth                 # never sent the stale token
    mine = json.loads(auth_path.read_text())["mcp_servers"]["remote"]
    assert mine["access_token"] == "tok-1"
    assert parse_expiry(mine["access_expires_at"]) > time.time() + 3000
    assert isinstance(mine["access_expires_at"], str)


def test_failed_refresh_is_readable_and_secret_free(tmp_path, mcp, manager_for):
    write_auth(tmp_path, int(time.time()) + 3600)
    mcp.fail_refresh = True
    mcp.expire()
    mgr, events = manager_for(mcp)
    wait_state(mgr, "failed")
    err = mgr.servers_view()[0]["error"]
    assert err == "MCP server remote: token refresh failed: HTTP 400 (invalid_grant)"
    assert "tok-" not in json.dumps(events) and "ref-" not in json.dumps(events)


def test_no_token_means_no_header(tmp_path, mcp):
    store = McpTokenStore(tmp_path)
    assert store.bearer("remote", entry(mcp)["oauth"]) is None
    assert store.bearer("remote", None, rejected="x") is None
    with pytest.raises(McpAuthError):
        write_auth(tmp_path, 0, refresh="wrong")
        store.bearer("remote", entry(mcp)["oauth"])
    assert parse_expiry(1_700_000_000_000) == 1_700_000_000.0
    assert parse_expiry("garbage") is None and parse_expiry(True) is None


def test_engine_uses_profile_auth_json(engine, server, tmp_path, mcp):
    profile = tmp_path / "home" / ".jucode"          # where EngineProc puts the profile
    profile.mkdir(parents=True)
    write_auth(profile, int(time.time()) + 3600)
    eng = engine({"mcp_servers": [entry(mcp)], "approval_mode": "full-access"}, wait=False)
    try:
        assert eng.profile == profile
        eng.wait_startup()
        server_state(eng, "remote", "connected")
        mcp.expire()
        server.script({"tool_calls": [{"name": "mcp__remote__whoami", "arguments": {},
                                      "call_id": "w1"}]}, {"text": "done"})
        m = eng.send({"op": "user_message", "content": "who"})
        eng.wait_status("ready", start=m, timeout=15)
        out = eng.since(m, "tool_output")[0]
        assert out["output"] == "caller ok" and not out["is_error"]
        m = eng.send({"op": "command", "input": "/doctor"})
        eng.wait_for(lambda e: e.get("type") == "info" and e["message"].startswith("mcp: "),
                     10, m)
        stored = json.loads((eng.profile / "auth.json").read_text())["mcp_servers"]["remote"]
        assert stored["access_token"] == "tok-1"
    finally:
        eng.close()
    dump = json.dumps(eng.events) + eng.stderr_text()
    log_dir = eng.profile / "logs"
    if log_dir.exists():
        dump += "".join(p.read_text(errors="replace") for p in log_dir.rglob("*") if p.is_file())
    assert "tok-0" not in dump and "tok-1" not in dump and "ref-" not in dump
    assert eng.protocol_bugs() == []
