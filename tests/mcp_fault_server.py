"""A scripted MCP stdio server (stdlib only) for the MCP client's normal and fault paths.

Usage: ``python mcp_fault_server.py MODE [--mode-file F] [--pid-file F]``

Modes:
  good      a well-behaved server: tools (paginated), prompts, resources, server->client requests
  crash     prints a reason on stderr and exits 3 as soon as it reads ``initialize``
  hang      reads everything and never answers (so ``initialize`` times out)
  garbage   answers every line with non-JSON text on stdout
  stubborn  like ``good`` but ignores SIGTERM and stdin EOF and keeps a grandchild process

``--mode-file`` reads MODE from a file at start (a test "fixes" a server by rewriting it and
reloading). ``--pid-file`` appends this pid (and the grandchild's) one per line.
"""

import json
import os
import signal
import subprocess
import sys
import time


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def reply(rid, result):
    send({"jsonrpc": "2.0", "id": rid, "result": result})


def error(rid, code, message):
    send({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})


TOOLS = [
    {"name": "echo", "description": "Echo the text back",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
     "annotations": {"readOnlyHint": True}},
    {"name": "fail", "description": "Always reports a tool error",
     "inputSchema": {"type": "object"}},
    {"name": "slow", "description": "Sleeps longer than any test timeout"},
    {"name": "image", "description": "Returns an image and a resource link"},
    {"name": "structured", "description": "Returns only structured content"},
    {"name": "empty", "description": "Returns nothing"},
    {"name": "roots", "description": "Asks the client for its roots"},
    {"name": "ask_unknown", "description": "Sends the client a request it does not know"},
    {"name": "add_tool", "description": "Adds a tool and sends tools/list_changed"},
    {"name": "die", "description": "Exits in the middle of the call"},
]
PROMPTS = [
    {"name": "greet", "description": "Greets someone",
     "arguments": [{"name": "who", "required": True}, {"name": "tone"}]},
    {"name": "plain", "description": "No arguments"},
    {"name": "optional", "description": "Optional arguments",
     "arguments": [{"name": "topic"}]},
]


def resources():
    cwd = os.getcwd()
    return [
        {"uri": "file://" + os.path.join(cwd, "inside.txt"), "name": "inside", "mimeType": "text/plain"},
        {"uri": "file:///etc/hostname", "name": "outside", "mimeType": "text/plain"},
        {"uri": "mem://hello", "name": "hello", "description": "a greeting", "mimeType": "text/plain"},
        {"uri": "mem://big", "name": "big", "mimeType": "text/plain"},
        {"uri": "mem://bin", "name": "bin", "mimeType": "application/octet-stream"},
    ]


def read_message():
    line = sys.stdin.readline()
    if not line:
        return None
    line = line.strip()
    return json.loads(line) if line else {}


def ask_client(method):
    """Send a server->client request and wait for its answer (other traffic is ignored)."""
    send({"jsonrpc": "2.0", "id": "srv-1", "method": method})
    while True:
        msg = read_message()
        if msg is None:
            sys.exit(0)
        if msg.get("id") == "srv-1":
            return msg


def call_tool(rid, params, extra_tools):
    name = params.get("name")
    args = params.get("arguments") or {}
    text = lambda t: reply(rid, {"content": [{"type": "text", "text": t}]})  # noqa: E731
    if name == "echo":
        text("echo: " + json.dumps(args, sort_keys=True))
    elif name == "fail":
        reply(rid, {"content": [{"type": "text", "text": "it failed"}], "isError": True})
    elif name == "slow":
        time.sleep(30)
        text("too late")
    elif name == "image":
        reply(rid, {"content": [{"type": "image", "data": "QUJDRA==", "mimeType": "image/png"},
                                {"type": "resource_link", "uri": "mem://hello", "name": "hello"},
                                {"type": "resource", "resource": {"uri": "mem://x", "text": "inline"}}]})
    elif name == "structured":
        reply(rid, {"content": [], "structuredContent": {"a": 1}})
    elif name == "empty":
        reply(rid, {"content": []})
    elif name == "roots":
        text(json.dumps(ask_client("roots/list").get("result")))
    elif name == "ask_unknown":
        text(json.dumps(ask_client("sampling/createMessage").get("error")))
    elif name == "add_tool":
        extra_tools.append({"name": "added", "description": "appeared later",
                            "inputSchema": {"type": "object"}})
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        text("added")
    elif name == "added" and extra_tools:
        text("the added tool ran")
    elif name == "die":
        sys.stderr.write("fatal: died during a call\n")
        sys.stderr.flush()
        os._exit(4)
    else:
        error(rid, -32602, f"Unknown tool: {name}")


def serve(stubborn=False):
    extra_tools = []
    while True:
        msg = read_message()
        if msg is None:
            if stubborn:
                while True:
                    time.sleep(1)
            return
        method, rid = msg.get("method"), msg.get("id")
        if rid is None or method is None:
            continue                                    # notifications and stray replies
        params = msg.get("params") or {}
        if method == "initialize":
            reply(rid, {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                        "capabilities": {"tools": {"listChanged": True}, "prompts": {},
                                         "resources": {}},
                        "serverInfo": {"name": "fault-server", "version": "1"}})
        elif method == "tools/list":
            tools = TOOLS + extra_tools
            if params.get("cursor") == "page2":
                reply(rid, {"tools": tools[5:]})
            else:
                reply(rid, {"tools": tools[:5], "nextCursor": "page2"})
        elif method == "tools/call":
            call_tool(rid, params, extra_tools)
        elif method == "prompts/list":
            reply(rid, {"prompts": PROMPTS})
        elif method == "prompts/get":
            args = params.get("arguments") or {}
            if params.get("name") == "greet":
                reply(rid, {"messages": [
                    {"role": "user", "content": {"type": "text",
                                                 "text": f"Say hello to {args.get('who')}"}},
                    {"role": "assistant", "content": {"type": "text", "text": "Hello!"}}]})
            elif params.get("name") in ("plain", "optional"):
                reply(rid, {"messages": [{"role": "user", "content": {
                    "type": "text", "text": "plain prompt " + json.dumps(args, sort_keys=True)}}]})
            else:
                error(rid, -32602, "unknown prompt")
        elif method == "resources/list":
            reply(rid, {"resources": resources()})
        elif method == "resources/read":
            uri = params.get("uri")
            if uri == "mem://big":
                body = {"uri": uri, "mimeType": "text/plain", "text": "x" * (300 * 1024)}
            elif uri == "mem://bin":
                body = {"uri": uri, "mimeType": "application/octet-stream", "blob": "AAEC"}
            elif uri.startswith("file://"):
                with open(uri[len("file://"):], encoding="utf-8") as fh:
                    body = {"uri": uri, "mimeType": "text/plain", "text": fh.read()}
            else:
                body = {"uri": uri, "mimeType": "text/plain", "text": "hello resource"}
            reply(rid, {"contents": [body]})
        elif method == "ping":
            reply(rid, {})
        else:
            error(rid, -32601, "Method not found")


def main():
    argv = sys.argv[1:]
    mode = argv[0] if argv and not argv[0].startswith("--") else "good"
    pid_file = None
    if "--mode-file" in argv:
        with open(argv[argv.index("--mode-file") + 1], encoding="utf-8") as fh:
            mode = fh.read().strip()
    if "--pid-file" in argv:
        pid_file = argv[argv.index("--pid-file") + 1]
    pids = [os.getpid()]
    if mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        pids.append(child.pid)
    if pid_file:
        with open(pid_file, "a", encoding="utf-8") as fh:
            fh.write("".join(f"{p}\n" for p in pids))
    sys.stderr.write(f"fault server starting in mode {mode}\n")
    sys.stderr.flush()
    if mode == "crash":
        read_message()
        sys.stderr.write("boom: missing configuration\n")
        sys.stderr.flush()
        sys.exit(3)
    if mode == "hang":
        while read_message() is not None:
            pass
        return
    if mode == "garbage":
        while read_message() is not None:
            sys.stdout.write("this is not json at all\n")
            sys.stdout.flush()
        return
    serve(stubborn=(mode == "stubborn"))


if __name__ == "__main__":
    main()
