"""A minimal Server-Sent Events decoder for byte chunks (used where no SDK parses for us).

Framing per §4.5 / the SSE spec: lines end with CR, LF or CRLF; ``data:`` lines (one leading
space trimmed) are joined with ``\\n`` and dispatched on a blank line; ``event:`` names the next
dispatch; lines starting with ``:`` are keep-alives; data left unterminated at EOF is still
dispatched (some servers omit the final blank line).
"""

from __future__ import annotations

from typing import Iterable, Iterator, Optional, Tuple


def iter_sse(chunks: Iterable[bytes]) -> Iterator[Tuple[Optional[str], str]]:
    """Yield ``(event_name or None, data)`` for each dispatched event."""
    buf = b""
    data: list = []
    name: Optional[str] = None
    pending_cr = False

    def field(line: bytes):
        nonlocal name
        if not line:
            return "dispatch"
        if line.startswith(b":"):
            return None
        key, sep, value = line.partition(b":")
        if sep and value.startswith(b" "):
            value = value[1:]
        k = key.decode("utf-8", "replace")
        if k == "data":
            data.append(value.decode("utf-8", "replace"))
        elif k == "event":
            name = value.decode("utf-8", "replace") or None
        return None

    for chunk in chunks:
        if not chunk:
            continue
        if pending_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        pending_cr = False
        buf += chunk
        while True:
            i_lf = buf.find(b"\n")
            i_cr = buf.find(b"\r")
            if i_lf < 0 and i_cr < 0:
                break
            if i_cr >= 0 and (i_lf < 0 or i_cr < i_lf):
                line, rest = buf[:i_cr], buf[i_cr + 1:]
                if rest.startswith(b"\n"):
                    rest = rest[1:]
                elif not rest:
                    pending_cr = True
            else:
                line, rest = buf[:i_lf], buf[i_lf + 1:]
            buf = rest
            if field(line) == "dispatch":
                if data:
                    yield name, "\n".join(data)
                data, name = [], None
    if buf:
        field(buf)
    if data:
        yield name, "\n".join(data)
