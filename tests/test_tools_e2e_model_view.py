"""What the model sees of tool results, concurrent read batches and images, through the real
engine (issue 5: projection, parallel batches, attachments)."""

from __future__ import annotations

import base64
import errno
import json
import os
import threading
import time

from test_tools_e2e_support import call, eng, fco, full_access, out_obj, outputs, run_calls  # noqa: F401

# A real 1x1 PNG.
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


def _user_images(body: dict) -> list:
    return [p for it in body["input"] if it.get("role") == "user" for p in it.get("content") or []
            if isinstance(p, dict) and p.get("type") == "input_image"]


def test_large_read_reaches_model_as_hashlines_only(eng, server):
    text = "".join(f"row {i} of a file long enough to pass one KiB\n" for i in range(60))
    (eng.cwd / "big.txt").write_text(text)
    (eng.cwd / "small.txt").write_text("tiny\n")
    m = run_calls(eng, server, [call("read", {"path": "big.txt"}, "r1"), call("read", {"path": "small.txt"}, "r2")])
    raw = out_obj(outputs(eng, m)["r1"])
    assert raw["content"] == text                  # the client gets everything
    model = json.loads(fco(server, "r1")["output"])
    assert "content" not in model and model["hashlines"] == raw["hashlines"]
    assert model["hashlines"].startswith("1#") and model["model_output_truncated"] is True
    assert model["note"].startswith("Large read output was projected for the model.")
    assert "full_output_path" not in model
    small = json.loads(fco(server, "r2")["output"])
    assert small["content"] == "tiny\n" and "model_output_truncated" not in small


def test_huge_bash_output_projected_with_full_output_path(eng, server):
    full_access(eng)
    m = run_calls(eng, server, [call("bash", {"command": "for i in $(seq 1 2000); do echo \"output line $i\"; done"},
                                     "b1")])
    ev = outputs(eng, m)["b1"]
    raw = out_obj(ev)                        # ~33 KiB: under the shell's own 3000 lines / 128 KiB cut
    assert raw["stdout"] == "".join(f"output line {i}\n" for i in range(1, 2001))
    assert raw["truncated"] is False and len(ev["output"]) > 16 * 1024
    model_text = fco(server, "b1")["output"]
    assert len(model_text.encode()) <= 16 * 1024
    model = json.loads(model_text)
    assert model["model_output_truncated"] is True
    assert "[...model projection omitted" in model["stdout"]
    path = model["full_output_path"]
    assert os.path.dirname(path) == os.path.join(os.path.realpath(str(eng.cwd)), ".jucode", "truncated-results")
    assert os.path.basename(path).startswith("bash-") and path.endswith(".json")
    with open(path, encoding="utf-8") as fh:
        assert fh.read() == ev["output"]


def _slow_fifo_writers(paths, hold: float, opened: dict, errors: list):
    """Each writer waits for the engine to open its FIFO, holds it ``hold`` s, then writes."""
    def feed(path):
        deadline = time.monotonic() + 15
        fd = None
        while fd is None:
            try:
                fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as e:
                if e.errno != errno.ENXIO or time.monotonic() > deadline:
                    errors.append(f"{path}: {e}")
                    return
                time.sleep(0.005)   # poll for the reader to open the FIFO
        opened[path] = time.monotonic()
        time.sleep(hold)            # the deliberate slowness of this "file"
        os.set_blocking(fd, True)
        os.write(fd, f"contents of {os.path.basename(path)}\n".encode())
        os.close(fd)
    threads = [threading.Thread(target=feed, args=(p,), daemon=True) for p in paths]
    for t in threads:
        t.start()
    return threads


def test_parallel_read_batch_is_concurrent_and_ordered(eng, server):
    hold = 0.4
    paths = []
    for i in range(4):
        p = str(eng.cwd / f"slow{i}.txt")
        os.mkfifo(p)
        paths.append(p)
    opened: dict = {}
    errors: list = []
    threads = _slow_fifo_writers(paths, hold, opened, errors)
    calls = [call("read", {"path": f"slow{i}.txt"}, f"r{i}") for i in range(4)]
    server.script({"tool_calls": calls}, {"text": "done"})
    m = eng.send({"op": "user_message", "content": "read slowly"})
    first_out = eng.wait_for("tool_output", start=m, timeout=20)
    eng.wait_for(lambda e: e.get("type") == "tool_output" and e.get("call_id") == "r3", start=m, timeout=20)
    t_last_out = time.monotonic()
    eng.wait_status("ready", start=m, timeout=20)
    for t in threads:
        t.join(5)
    assert not errors, errors
    starts = sorted(opened.values())
    # all four reads were blocked at the same time: sequential runs would be >= hold apart
    assert starts[-1] - starts[0] < hold * 0.75, starts
    # the whole batch takes about one read's time; one at a time it would take >= 4 * hold
    assert t_last_out - starts[0] < 3 * hold, t_last_out - starts[0]
    outs = eng.since(m, "tool_output")
    assert [e["call_id"] for e in outs] == ["r0", "r1", "r2", "r3"] and first_out["call_id"] == "r0"
    for i, ev in enumerate(outs):
        assert ev["is_error"] is False and out_obj(ev)["content"] == f"contents of slow{i}.txt\n"


def test_read_png_sends_separate_image_input(eng, server):
    (eng.cwd / "pic.png").write_bytes(PNG)
    m = run_calls(eng, server, [call("read", {"path": "pic.png"}, "i1")])
    raw = out_obj(outputs(eng, m)["i1"])
    assert raw["kind"] == "image" and raw["mime"] == "image/png" and raw["base64"]
    body = server.requests[-1]["body"]
    items = body["input"]
    idx_out = next(i for i, it in enumerate(items) if it.get("type") == "function_call_output")
    model = json.loads(items[idx_out]["output"])
    assert "base64" not in model
    assert model["note"] == "Image content is attached as a separate message; view it directly."
    after = items[idx_out + 1]
    assert after["role"] == "user"
    assert after["content"][0]["type"] == "input_image"
    assert after["content"][0]["image_url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()


def test_read_too_large_image_and_binary(eng, server):
    (eng.cwd / "huge.png").write_bytes(PNG + b"\0" * (1024 * 1024 + 10))
    (eng.cwd / "blob.bin").write_bytes(bytes(range(256)) * 4)
    m = run_calls(eng, server, [call("read", {"path": "huge.png"}, "i1"), call("read", {"path": "blob.bin"}, "i2")])
    outs = outputs(eng, m)
    big = out_obj(outs["i1"])
    assert outs["i1"]["is_error"] and big["kind"] == "image" and big["truncated"] is True
    assert big["error"].startswith("image is too large to inline")
    blob = out_obj(outs["i2"])
    assert outs["i2"]["is_error"] and blob == {"path": "blob.bin", "kind": "binary", "bytes": 1024,
                                               "error": "file is not supported text encoding"}
    assert not _user_images(server.requests[-1]["body"])


def test_slash_image_stages_for_next_message(eng, server):
    pic = eng.cwd / "shot.png"
    pic.write_bytes(PNG)
    (eng.cwd / "notes.txt").write_text("not an image")
    (eng.cwd / "big.png").write_bytes(b"\0" * (1024 * 1024 + 1))
    m = eng.send({"op": "command", "input": "/image shot.png"})
    info = eng.wait_for("info", start=m)
    assert info["message"] == f"attached {pic}; it will be sent with your next message (1 staged)"
    m = eng.send({"op": "command", "input": "/image notes.txt"})
    assert eng.wait_for("error", start=m)["message"] == f"cannot attach {eng.cwd / 'notes.txt'}: not a supported image"
    m = eng.send({"op": "command", "input": "/image big.png"})
    assert eng.wait_for("error", start=m)["message"] == f"cannot attach {eng.cwd / 'big.png'}: image is too large to attach"
    m = eng.send({"op": "command", "input": "/image"})
    assert eng.wait_for("error", start=m)["message"] == "usage: /image <path> — attach an image to your next message"
    server.script({"text": "a picture"})
    m = eng.send({"op": "user_message", "content": "what is this"})
    eng.wait_status("ready", start=m)
    imgs = _user_images(server.requests[-1]["body"])
    assert [p["image_url"] for p in imgs] == ["data:image/png;base64," + base64.b64encode(PNG).decode()]
    # staged images are used once
    server.script({"text": "no picture"})
    m = eng.send({"op": "user_message", "content": "again"})
    eng.wait_status("ready", start=m)
    assert len(_user_images(server.requests[-1]["body"])) == 1


def test_user_message_images_are_size_and_type_checked(eng, server):
    pic = eng.cwd / "ok.png"
    pic.write_bytes(PNG)
    (eng.cwd / "big.gif").write_bytes(b"GIF89a" + b"\0" * (1024 * 1024))
    (eng.cwd / "doc.txt").write_text("text")
    server.script({"text": "seen"})
    m = eng.send({"op": "user_message", "content": "look", "images": ["big.gif", "doc.txt", "ok.png"]})
    eng.wait_status("ready", start=m)
    infos = [e["message"] for e in eng.since(m, "info")]
    assert any(i.startswith("skipped attachment") and i.endswith("image is too large to attach") for i in infos)
    assert any(i.startswith("skipped attachment") and i.endswith("not a supported image") for i in infos)
    assert eng.wait_for("user_message", start=m)["images"] == [str(pic)]
    assert len(_user_images(server.requests[-1]["body"])) == 1
