"""Pure-Python xxHash32: the hashline anchors must match upstream's bit for bit.

Only short inputs (one source line) are hashed, so a straightforward implementation is fast
enough and avoids a native dependency.
"""

from __future__ import annotations

import struct

P1 = 0x9E3779B1
P2 = 0x85EBCA77
P3 = 0xC2B2AE3D
P4 = 0x27D4EB2F
P5 = 0x165667B1
M = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & M


def _round(acc: int, lane: int) -> int:
    acc = (acc + lane * P2) & M
    return (_rotl(acc, 13) * P1) & M


def xxh32(data: bytes, seed: int = 0) -> int:
    """Standard xxHash32 of ``data`` with ``seed`` (both as in the reference C implementation)."""
    seed &= M
    n = len(data)
    i = 0
    if n >= 16:
        v1 = (seed + P1 + P2) & M
        v2 = (seed + P2) & M
        v3 = seed
        v4 = (seed - P1) & M
        limit = n - 16
        while i <= limit:
            a, b, c, d = struct.unpack_from("<4I", data, i)
            v1 = _round(v1, a)
            v2 = _round(v2, b)
            v3 = _round(v3, c)
            v4 = _round(v4, d)
            i += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & M
    else:
        h = (seed + P5) & M
    h = (h + n) & M
    while i + 4 <= n:
        (k,) = struct.unpack_from("<I", data, i)
        h = (_rotl((h + k * P3) & M, 17) * P4) & M
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * P5) & M, 11) * P1) & M
        i += 1
    h ^= h >> 15
    h = (h * P2) & M
    h ^= h >> 13
    h = (h * P3) & M
    h ^= h >> 16
    return h
