"""Landing files as the usual compression tools write them, built by hand (no codec library):
an LZ4 frame as ``lz4 --no-frame-crc`` writes it, and a raw Snappy block, each holding its data
uncompressed (a stored block / literals), which every decoder of the format accepts."""

from __future__ import annotations

import struct

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M


def _xxh32_short(data: bytes) -> int:
    """xxHash32, seed 0, of fewer than 4 bytes (an LZ4 frame descriptor is 2)."""
    assert len(data) < 4
    h = (_P5 + len(data)) & _M
    for b in data:
        h = _rotl((h + b * _P5) & _M, 11) * _P1 & _M
    for shift, prime in ((15, _P2), (13, _P3)):
        h = ((h ^ (h >> shift)) * prime) & _M
    return h ^ (h >> 16)


def lz4_frame(data: bytes) -> bytes:
    """An LZ4 frame (magic 04 22 4D 18; version 1, independent blocks, 64 KiB blocks, no
    checksums) with ``data`` in stored blocks, then the end mark."""
    descriptor = bytes([0x60, 0x40])
    check = (_xxh32_short(descriptor) >> 8) & 0xFF
    out = [struct.pack("<I", 0x184D2204), descriptor, bytes([check])]
    for i in range(0, len(data), 65536):
        block = data[i : i + 65536]
        out += [struct.pack("<I", len(block) | 0x80000000), block]
    return b"".join([*out, b"\0\0\0\0"])


def snappy_raw(data: bytes) -> bytes:
    """A raw Snappy block (what ``snappy.compress`` returns): the length as a varint, then
    ``data`` as one literal."""
    n, varint = len(data), bytearray()
    while True:
        varint.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            break
    size = len(data) - 1
    tag = bytes([60 << 2, size]) if size < 256 else bytes([61 << 2]) + struct.pack("<H", size)
    assert size < 65536
    return bytes(varint) + tag + data
