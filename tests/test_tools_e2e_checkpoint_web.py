"""``checkpoint`` and ``web_fetch`` through the real engine (issue 5 follow-up): snapshots
restore exact bytes, and web_fetch talks to a real HTTP server on 127.0.0.1 with upstream's
limits (2 MiB cap, 5 redirects, http/https only) and its approval gate."""

from __future__ import annotations

import http.server
import json
import threading

import pytest

from test_tools_e2e_support import call, eng, fco, full_access, out_obj, outputs, run_calls  # noqa: F401

CAP = 2 * 1024 * 1024
PAGE = (b"<!DOCTYPE html><html><head><title>The  Title</title><style>body{color:red}</style>"
        b"<script>var hidden = 1;</script></head><body><nav>menu</nav><h1>Heading</h1>"
        b"<p>Fish &amp; chips <script>alert('no')</script>cost &lt;5&gt;</p>"
        b"<p>See <a href=\"/docs?a=1\">the   docs</a> now</p><ul><li>one</li><li>two</li></ul>"
        b"<footer>foot</footer></body></html>")
PAGE_TEXT = ("The Title\n\nHeading\nFish & chips cost <5>\nSee the docs (/docs?a=1) now\n- one\n- two")
MISSING = b"<h1>not here</h1>" + b"y" * 3000


class _Handler(http.server.BaseHTTPRequestHandler):
    def _send(self, code: int, body: bytes, ctype: str = "text/html; charset=utf-8") -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _redirect(self, where: str) -> None:
        self.send_response(302)
        self.send_header("Location", where)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):  # noqa: N802 (http.server API)
        if self.path == "/page":
            self._send(200, PAGE)
        elif self.path == "/missing":
            self._send(404, MISSING)
        elif self.path == "/big":
            self._send(200, b"z" * (CAP + 4096), "text/plain")
        elif self.path.startswith("/r/"):           # /r/N needs N redirects to reach the page
            n = int(self.path[3:])
            self._redirect(f"/r/{n - 1}") if n else self._send(200, PAGE)
        elif self.path == "/tofile":
            self._redirect("file:///etc/passwd")
        else:
            self._send(404, b"?")

    def log_message(self, *a):
        pass


@pytest.fixture
def web():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


# -- checkpoint -------------------------------------------------------------------------------

def test_checkpoint_create_list_restore_exact_bytes(eng, server):
    full_access(eng)
    cwd = eng.cwd
    originals = {
        "text.txt": "héllo\r\nwörld ✓\r\nno final newline".encode("utf-8"),
        "ctrl.bin": b"\x00\x01\x02\x7f\tNUL and control bytes\x00\n\x1b[0m",   # binary, valid UTF-8
        "dir/gone.txt": b"will be deleted\n",
        "empty.txt": b"",
    }
    for rel, data in originals.items():
        (cwd / rel).parent.mkdir(parents=True, exist_ok=True)
        (cwd / rel).write_bytes(data)
    raw = b"\xff\xfe\x00\x80 not utf-8"
    (cwd / "raw.bin").write_bytes(raw)
    paths = list(originals) + ["later.txt", "raw.bin"]
    m = run_calls(eng, server, [call("checkpoint", {"action": "create", "name": "before", "paths": paths}, "c1")])
    created = out_obj(outputs(eng, m)["c1"])
    assert set(created) == {"id", "name", "files", "bytes"} and created["name"] == "before"
    assert created["files"] == 6 and created["bytes"] == sum(len(d) for d in originals.values())
    assert (cwd / ".jucode" / ".gitignore").read_text() == "*\n"
    stored = json.loads((cwd / ".jucode" / "checkpoints" / f"{created['id']}.json").read_text())
    by_path = {f["path"]: f["content"] for f in stored["files"]}
    assert by_path["later.txt"] is None and by_path["raw.bin"] == {"unreadable": True}

    # the world changes: edits, a deletion, a new file, binary overwritten
    (cwd / "text.txt").write_bytes(b"changed\n")
    (cwd / "ctrl.bin").write_bytes(b"\x00changed")
    (cwd / "dir" / "gone.txt").unlink()
    (cwd / "dir").rmdir()
    (cwd / "empty.txt").write_bytes(b"now full")
    (cwd / "later.txt").write_text("created after the checkpoint")
    (cwd / "raw.bin").write_bytes(b"\xff changed")

    m = run_calls(eng, server, [call("checkpoint", {"action": "list"}, "l1"),
                                call("checkpoint", {"action": "restore", "id": created["id"]}, "r1"),
                                call("checkpoint", {"action": "restore", "id": "cp-1"}, "r2")])
    outs = outputs(eng, m)
    listing = out_obj(outs["l1"])["checkpoints"]
    assert listing[0] == {"id": created["id"], "name": "before", "created_at": stored["created_at"],
                          "files": 6, "bytes": created["bytes"]}
    restored = out_obj(outs["r1"])
    assert sorted(restored["restored"]) == sorted(originals) and restored["removed"] == ["later.txt"]
    assert restored["skipped"] == ["raw.bin"] and restored["warning"].startswith("some files were unreadable")
    assert outs["r1"]["is_error"] is False
    for rel, data in originals.items():
        assert (cwd / rel).read_bytes() == data, rel
    assert not (cwd / "later.txt").exists()
    # upstream stores non-UTF-8 files as {"unreadable": true}: restore leaves them alone
    assert (cwd / "raw.bin").read_bytes() == b"\xff changed"
    assert out_obj(outs["r2"]) == {"error": "unknown checkpoint id: cp-1"} and outs["r2"]["is_error"] is True
    # the model got the same restore result
    assert json.loads(fco(server, "r1")["output"])["removed"] == ["later.txt"]


# -- web_fetch --------------------------------------------------------------------------------

def _fetch(eng, server, *specs) -> dict:
    calls = [call("web_fetch", args, cid) for cid, args in specs]
    m = run_calls(eng, server, calls, timeout=20)
    return outputs(eng, m)


def test_web_fetch_html_errors_cap_and_redirects(eng, server, web):
    full_access(eng)
    outs = _fetch(eng, server,
                  ("page", {"url": web + "/page"}),
                  ("raw", {"url": web + "/page", "raw": True}),
                  ("404", {"url": web + "/missing"}),
                  ("big", {"url": web + "/big"}),
                  ("small", {"url": web + "/big", "max_bytes": 100}),
                  ("r5", {"url": web + "/r/5"}),
                  ("r6", {"url": web + "/r/6"}),
                  ("file", {"url": "file:///etc/passwd"}),
                  ("cred", {"url": web.replace("http://", "http://user:pw@") + "/page"}),
                  ("tofile", {"url": web + "/tofile"}))
    page = out_obj(outs["page"])
    assert page == {"url": web + "/page", "status": 200, "content_type": "text/html; charset=utf-8",
                    "bytes": len(PAGE), "text": PAGE_TEXT}
    assert outs["page"]["is_error"] is False
    assert out_obj(outs["raw"])["text"] == PAGE.decode()

    missing = out_obj(outs["404"])
    assert missing == {"url": web + "/missing", "status": 404, "error": "HTTP 404 Not Found",
                       "body_snippet": MISSING[:2048].decode()}
    assert outs["404"]["is_error"] is True

    big = out_obj(outs["big"])
    assert big["bytes"] == CAP and len(big["text"]) == CAP and big["network_truncated"] is True
    assert big["note"] == f"response was cut at {CAP} bytes" and outs["big"]["is_error"] is False
    small = out_obj(outs["small"])
    assert small["bytes"] == 100 and small["text"] == "z" * 100 and small["network_truncated"] is True

    r5 = out_obj(outs["r5"])
    assert r5["url"] == web + "/r/0" and r5["status"] == 200 and r5["text"] == PAGE_TEXT
    assert out_obj(outs["r6"]) == {"error": "too many redirects (more than 5)"}
    assert out_obj(outs["file"]) == {"error": "only http:// and https:// URLs are supported"}
    assert out_obj(outs["cred"]) == {"error": "URLs with embedded credentials are not supported"}
    assert out_obj(outs["tofile"]) == {"error": "only http:// and https:// URLs are supported"}
    assert all(outs[c]["is_error"] for c in ("r6", "file", "cred", "tofile"))
    # the model's copy of the 2 MiB body is projected down, never the raw megabytes
    assert len(fco(server, "big")["output"]) < CAP


def test_web_fetch_asks_in_manual_and_runs_in_auto_edit(eng, server, web):
    m = eng.send({"op": "set_approval_mode", "mode": "manual"})
    eng.wait_for("approval_mode", start=m)
    server.script({"tool_calls": [call("web_fetch", {"url": web + "/page"}, "w1")]}, {"text": "ok"})
    m = eng.send({"op": "user_message", "content": "fetch"})
    req = eng.wait_for("approval_request", start=m)
    assert req["call_id"] == "w1" and req["name"] == "web_fetch" and req["hunks"] is None
    assert req["summary"] == ""            # upstream 5.16: no path argument → empty summary
    assert not eng.since(m, "tool_output")
    eng.send({"op": "approve", "call_id": "w1", "decision": "allow"})
    eng.wait_status("ready", start=m, timeout=15)
    assert out_obj(outputs(eng, m)["w1"])["text"] == PAGE_TEXT

    m = eng.send({"op": "set_approval_mode", "mode": "auto-edit"})
    eng.wait_for("approval_mode", start=m)
    m = run_calls(eng, server, [call("web_fetch", {"url": web + "/page"}, "w2")])
    assert not eng.since(m, "approval_request")
    assert out_obj(outputs(eng, m)["w2"])["status"] == 200
