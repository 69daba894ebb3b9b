"""Text decoding rules shared by read and the edit tools (BOMs, UTF-8, binary detection).

Edits must write a file back in the encoding it was read in, so decoding returns the encoding
label and :func:`encode_text` reverses it exactly (BOM included).
"""

from __future__ import annotations

from typing import Optional, Tuple

BOMS = (
    (b"\xef\xbb\xbf", "utf-8-bom", "utf-8"),
    (b"\xff\xfe", "utf-16le", "utf-16-le"),
    (b"\xfe\xff", "utf-16be", "utf-16-be"),
)


def decode_text(data: bytes) -> Optional[Tuple[str, str]]:
    """Return ``(text, encoding_label)`` or None when the bytes are not supported text."""
    for bom, label, codec in BOMS:
        if data.startswith(bom):
            try:
                return data[len(bom):].decode(codec), label
            except UnicodeDecodeError:
                return None
    try:   # as upstream: valid UTF-8 is text, NUL bytes included (no NUL sniffing)
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return None


def encode_text(text: str, label: str) -> bytes:
    for bom, name, codec in BOMS:
        if name == label:
            return bom + text.encode(codec)
    return text.encode("utf-8")


def read_for_edit(ctx, path: str, raw_path: str, tool: str):
    """The common first step of every text edit: read the file, insist it is unchanged since
    the agent read it (read-before-edit), and decode it. Returns ``(data, text, encoding)``."""
    from .base import ToolError
    from .common import check_fresh
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise ToolError(f"failed to read {raw_path}: {exc.strerror or exc}")
    check_fresh(ctx, path, data, tool)
    decoded = decode_text(data)
    if decoded is None:
        raise ToolError("file is not supported text encoding")
    return data, decoded[0], decoded[1]
