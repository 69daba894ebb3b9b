"""A scripted OpenAI-compatible model server for tests (stdlib only, loopback only).

Tests queue replies with :meth:`FakeModelServer.script`; each POST to ``/v1/responses`` or
``/v1/chat/completions`` consumes the next reply and renders it in that wire format as real
SSE over chunked HTTP. Every request is recorded (path, headers, parsed body) so tests can
assert what the engine sent. A reply is a dict:

``text`` str (streamed in ``chunk``-sized deltas, default 4), ``reasoning`` str,
``tool_calls`` [{name, arguments (dict or str), call_id?}], ``usage`` {input, cached, output,
reasoning, headers}, ``status`` int with optional ``body``/``headers`` (an HTTP error instead of a
stream), ``drop`` (close the connection before answering), ``truncate_after`` N (stop the
stream after N events, no terminal event), ``gap`` seconds between events, ``stall`` seconds
to wait before the terminal event (ends early when the server closes), ``raw`` [(event, data)]
to send exact SSE frames, ``json`` dict to answer with a plain JSON body, ``html`` str to
answer with an HTML page, ``match`` a substring the request body must contain for this reply
(replies without it are served FIFO to requests no ``match`` reply claims). ``POST …/messages`` renders Anthropic Messages SSE (``usage`` may
add ``cache_write``). Quirks: ``repeat_ids`` (chat: llama.cpp-style id/name in every tool delta),
``no_usage`` (chat: no usage chunk), ``reasoning_field`` (chat: ``reasoning`` instead of
``reasoning_content``).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _split(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or []


def _usage(reply: dict) -> dict:
    u = {"input": 100, "cached": 0, "output": 10, "reasoning": 0}
    u.update(reply.get("usage") or {})
    return u


def responses_events(reply: dict) -> list:
    """Render a reply as the Responses API SSE sequence (test-doubles §1.2 shapes)."""
    rid = "resp_1"
    out_items: list = []
    ev: list = []
    seq = [0]

    def add(kind, data):
        data = dict(data, type=kind, sequence_number=seq[0])
        seq[0] += 1
        ev.append((kind, data))

    base = {"id": rid, "object": "response", "created_at": 1700000000, "status": "in_progress",
            "model": "m", "output": [], "error": None, "usage": None}
    add("response.created", {"response": base})
    idx = 0
    chunk = reply.get("chunk", 4)
    if reply.get("reasoning"):
        item_id = "rs_1"
        add("response.output_item.added", {"output_index": idx, "item": {"id": item_id, "type": "reasoning", "summary": []}})
        for d in _split(reply["reasoning"], chunk):
            add("response.reasoning_summary_text.delta", {"item_id": item_id, "output_index": idx, "summary_index": 0, "delta": d})
        item = {"id": item_id, "type": "reasoning", "summary": [{"type": "summary_text", "text": reply["reasoning"]}],
                "encrypted_content": "enc-blob"}
        add("response.output_item.done", {"output_index": idx, "item": item})
        out_items.append(item)
        idx += 1
    if reply.get("text") is not None:
        item_id = f"msg_{idx}"
        add("response.output_item.added", {"output_index": idx, "item": {"id": item_id, "type": "message", "status": "in_progress", "role": "assistant", "content": []}})
        for d in _split(reply["text"], chunk):
            add("response.output_text.delta", {"item_id": item_id, "output_index": idx, "content_index": 0, "delta": d, "logprobs": []})
        item = {"id": item_id, "type": "message", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": reply["text"], "annotations": []}]}
        add("response.output_item.done", {"output_index": idx, "item": item})
        out_items.append(item)
        idx += 1
    for n, call in enumerate(reply.get("tool_calls") or []):
        args = call.get("arguments", {})
        args = args if isinstance(args, str) else json.dumps(args)
        item_id = f"fc_{idx}"
        call_id = call.get("call_id") or f"call_{idx}_{n}"
        add("response.output_item.added", {"output_index": idx, "item": {"id": item_id, "type": "function_call", "status": "in_progress", "call_id": call_id, "name": call["name"], "arguments": ""}})
        for d in _split(args, max(chunk, 8)):
            add("response.function_call_arguments.delta", {"item_id": item_id, "output_index": idx, "delta": d})
        item = {"id": item_id, "type": "function_call", "status": "completed", "call_id": call_id, "name": call["name"], "arguments": args}
        add("response.output_item.done", {"output_index": idx, "item": item})
        out_items.append(item)
        idx += 1
    u = _usage(reply)
    done = dict(base, status="completed", output=out_items, usage={
        "input_tokens": u["input"], "input_tokens_details": {"cached_tokens": u["cached"]},
        "output_tokens": u["output"], "output_tokens_details": {"reasoning_tokens": u["reasoning"]},
        "total_tokens": u["input"] + u["output"]})
    add("response.completed", {"response": done})
    return ev


def chat_events(reply: dict) -> list:
    """Render a reply as Chat Completions chunks (test-doubles §1.3 shapes)."""
    ev: list = []

    def chunk_of(delta=None, finish=None, usage=None, choices=True):
        c = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000, "model": "m"}
        c["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}] if choices else []
        if usage is not None:
            c["usage"] = usage
        ev.append((None, c))

    size = reply.get("chunk", 4)
    chunk_of({"role": "assistant", "content": ""})
    rfield = reply.get("reasoning_field", "reasoning_content")
    for d in _split(reply.get("reasoning") or "", size):
        chunk_of({rfield: d})
    for d in _split(reply.get("text") or "", size):
        chunk_of({"content": d})
    calls = reply.get("tool_calls") or []
    for i, call in enumerate(calls):
        args = call.get("arguments", {})
        args = args if isinstance(args, str) else json.dumps(args)
        call_id = call.get("call_id") or f"call_{i}"
        chunk_of({"tool_calls": [{"index": i, "id": call_id, "type": "function", "function": {"name": call["name"], "arguments": ""}}]})
        for d in _split(args, max(size, 8)):
            if reply.get("repeat_ids"):  # llama.cpp repeats id and name in every delta
                chunk_of({"tool_calls": [{"index": i, "id": call_id, "type": "function",
                                          "function": {"name": call["name"], "arguments": d}}]})
            else:
                chunk_of({"tool_calls": [{"index": i, "function": {"arguments": d}}]})
    chunk_of({}, finish="tool_calls" if calls else "stop")
    u = _usage(reply)
    if reply.get("no_usage"):
        ev.append((None, "[DONE]"))
        return ev
    chunk_of(choices=False, usage={"prompt_tokens": u["input"], "completion_tokens": u["output"],
                                   "total_tokens": u["input"] + u["output"],
                                   "prompt_tokens_details": {"cached_tokens": u["cached"]},
                                   "completion_tokens_details": {"reasoning_tokens": u["reasoning"]}})
    ev.append((None, "[DONE]"))
    return ev


def anthropic_events(reply: dict) -> list:
    """Render a reply as an Anthropic Messages SSE sequence (thinking, text, tool_use blocks)."""
    ev: list = []

    def add(kind, data):
        ev.append((kind, dict(data, type=kind)))

    u = _usage(reply)
    size = reply.get("chunk", 4)
    add("message_start", {"message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                                      "content": [], "stop_reason": None,
                                      "usage": {"input_tokens": u["input"], "cache_read_input_tokens": u["cached"],
                                                "cache_creation_input_tokens": u.get("cache_write", 0),
                                                "output_tokens": 1}}})
    idx = 0
    if reply.get("reasoning"):
        add("content_block_start", {"index": idx, "content_block": {"type": "thinking", "thinking": ""}})
        for d in _split(reply["reasoning"], size):
            add("content_block_delta", {"index": idx, "delta": {"type": "thinking_delta", "thinking": d}})
        add("content_block_delta", {"index": idx, "delta": {"type": "signature_delta", "signature": reply.get("signature", "sig-1")}})
        add("content_block_stop", {"index": idx})
        idx += 1
    if reply.get("text"):
        add("content_block_start", {"index": idx, "content_block": {"type": "text", "text": ""}})
        for d in _split(reply["text"], size):
            add("content_block_delta", {"index": idx, "delta": {"type": "text_delta", "text": d}})
        add("content_block_stop", {"index": idx})
        idx += 1
    calls = reply.get("tool_calls") or []
    for n, call in enumerate(calls):
        args = call.get("arguments", {})
        args = args if isinstance(args, str) else json.dumps(args)
        add("content_block_start", {"index": idx, "content_block": {"type": "tool_use", "id": call.get("call_id") or f"toolu_{n}",
                                                                    "name": call["name"], "input": {}}})
        for d in _split(args, max(size, 8)):
            add("content_block_delta", {"index": idx, "delta": {"type": "input_json_delta", "partial_json": d}})
        add("content_block_stop", {"index": idx})
        idx += 1
    add("message_delta", {"delta": {"stop_reason": "tool_use" if calls else "end_turn"},
                          "usage": {"output_tokens": u["output"]}})
    add("message_stop", {})
    return ev


RENDERERS = {"responses": responses_events, "chat": chat_events, "anthropic": anthropic_events}


class FakeModelServer:
    """Start with ``FakeModelServer()``; ``base_url`` is ready at once; ``close()`` when done."""

    def __init__(self):
        self.requests: list[dict] = []
        self._replies: list[dict] = []
        self._lock = threading.Condition()
        self._closing = threading.Event()
        self.default_reply: dict | None = None
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True      # no 40 ms delayed-ACK stall per request

            def log_message(self, *a):
                pass

            def handle(self):
                try:
                    super().handle()
                except (ConnectionResetError, BrokenPipeError, ConnectionAbortedError):
                    pass

            def do_POST(self):
                outer._serve(self)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    # -- scripting -------------------------------------------------------------------------
    def script(self, *replies: dict) -> None:
        with self._lock:
            self._replies.extend(replies)

    def wait_requests(self, n: int, timeout: float = 10.0) -> list[dict]:
        deadline = time.monotonic() + timeout
        with self._lock:
            while len(self.requests) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"expected {n} model requests, got {len(self.requests)}")
                self._lock.wait(left)
            return list(self.requests)

    def close(self) -> None:
        self._closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    # -- serving ---------------------------------------------------------------------------
    def _next_reply(self, raw_text: str = "") -> dict | None:
        """The first scripted reply whose ``match`` substring occurs in the request body, else
        the first reply without ``match`` (FIFO), else ``default_reply``. ``match`` lets tests
        route replies per concurrent caller (e.g. per subagent)."""
        with self._lock:
            for i, r in enumerate(self._replies):
                if r.get("match") is not None and r["match"] in raw_text:
                    return self._replies.pop(i)
            for i, r in enumerate(self._replies):
                if r.get("match") is None:
                    return self._replies.pop(i)
            return self.default_reply

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        n = int(h.headers.get("content-length") or 0)
        raw = h.rfile.read(n) if n else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        path = h.path.split("?", 1)[0].rstrip("/")
        kind = "responses" if path.endswith("/responses") else (
            "chat" if "chat/completions" in path else ("anthropic" if path.endswith("/messages") else h.path))
        reply = self._next_reply(raw.decode("utf-8", "replace"))
        with self._lock:
            self.requests.append({"path": h.path, "kind": kind, "headers": {k.lower(): v for k, v in h.headers.items()},
                                  "body": body, "t": time.time()})
            self._lock.notify_all()
        if reply is None:
            return self._send_json(h, 400, {"error": {"message": "no scripted reply", "type": "invalid_request_error"}})
        if reply.get("drop"):
            h.connection.shutdown(socket.SHUT_RDWR)
            h.close_connection = True
            return
        if "status" in reply:
            body = reply.get("body") or {"error": {"message": f"scripted {reply['status']}", "type": "server_error"}}
            return self._send_json(h, reply["status"], body, reply.get("headers") or {})
        if "json" in reply:
            return self._send_json(h, 200, reply["json"])
        if "html" in reply:
            data = reply["html"].encode()
            h.send_response(reply.get("html_status", 200))
            h.send_header("content-type", "text/html")
            h.send_header("content-length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
            return
        renderer = RENDERERS.get(kind)
        if reply.get("raw") is not None:
            events = reply["raw"]
        elif renderer is None:
            return self._send_json(h, 404, {"error": {"message": f"unknown endpoint {h.path}"}})
        else:
            events = renderer(reply)
        self._stream(h, events, reply)

    def _send_json(self, h, code: int, obj: dict, headers: dict | None = None) -> None:
        data = json.dumps(obj).encode()
        h.send_response(code)
        h.send_header("content-type", "application/json")
        h.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            h.send_header(k, str(v))
        h.end_headers()
        h.wfile.write(data)

    def _stream(self, h, events: list, reply: dict) -> None:
        h.send_response(200)
        h.send_header("content-type", "text/event-stream; charset=utf-8")
        h.send_header("transfer-encoding", "chunked")
        for k, v in (reply.get("headers") or {}).items():
            h.send_header(k, str(v))
        h.end_headers()
        h.wfile.flush()
        truncate = reply.get("truncate_after")
        gap = reply.get("gap", 0)
        stall = reply.get("stall", 0)
        for i, (name, data) in enumerate(events):
            if truncate is not None and i >= truncate:
                h.wfile.flush()
                h.connection.shutdown(socket.SHUT_RDWR)
                h.close_connection = True
                return
            if stall and i == len(events) - 1:
                if self._closing.wait(stall):
                    return
            elif gap and i:
                if self._closing.wait(gap):
                    return
            payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
            frame = ((f"event: {name}\n" if name else "") + f"data: {payload}\n\n").encode()
            h.wfile.write(b"%x\r\n" % len(frame) + frame + b"\r\n")
            h.wfile.flush()
        h.wfile.write(b"0\r\n\r\n")
        h.wfile.flush()


def request_input_texts(req: dict) -> list[str]:
    """All user/tool texts of a recorded Responses or Chat request, for assertions."""
    body = req["body"]
    out = []
    for item in body.get("input") or body.get("messages") or []:
        if not isinstance(item, dict):
            continue
        c = item.get("content")
        if isinstance(c, str):
            out.append(c)
        elif isinstance(c, list):
            out.extend(p.get("text", "") for p in c if isinstance(p, dict))
        if item.get("type") == "function_call_output":
            out.append(item.get("output", ""))
    return out
