"""The binary bucket blobs of earlier releases (state ``keys int, blob binary``): read only by
the migration rules that turn them into today's typed bucket rows (:mod:`spark_jobs.state.buckets`,
``upgrade migrate``); :func:`encode` stays so tests can write such a blob as those releases did.

Layout: ``b"SKB"``, a version byte, the number of keys held (uint32), the number of columns
(uint32); then per column its name, a type code (``q`` int64, ``?`` bool, ``s`` UTF-8 string or
None) and its values. The key count sits in the fixed header so tools can report keys per bucket
by reading eight bytes, without decoding anything else.

No pickle: a blob is plain numbers and text, readable by any later release that knows the layout.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

import numpy as np

MAGIC = b"SKB"
VERSION = 1
_HEADER = struct.Struct("<3sBII")
_COLUMN = struct.Struct("<B")
_COUNT = struct.Struct("<I")


def _encode_strings(values: np.ndarray) -> bytes:
    items = values.tolist()
    if None not in items:
        text = "".join(items)
        if text.isascii():  # the common case: one join, byte lengths = character lengths
            return np.fromiter(
                map(len, items), dtype="<i4", count=len(items)
            ).tobytes() + text.encode("ascii")
    encoded = [None if v is None else str(v).encode("utf-8") for v in items]
    lengths = np.fromiter(
        (-1 if b is None else len(b) for b in encoded), dtype="<i4", count=len(encoded)
    )
    return lengths.tobytes() + b"".join(b for b in encoded if b)


def _decode_strings(buf: memoryview, n: int) -> tuple[np.ndarray, int]:
    lengths = np.frombuffer(buf[: 4 * n], dtype="<i4")
    sizes = np.maximum(lengths, 0)
    ends = np.cumsum(sizes, dtype=np.int64)
    total = int(ends[-1]) if n else 0
    payload = bytes(buf[4 * n : 4 * n + total])
    starts = (ends - sizes).tolist()
    stops = ends.tolist()
    out = np.empty(n, dtype=object)
    if payload.isascii():  # the common case: slice one decoded string
        text = payload.decode("ascii")
        out[:] = [text[a:b] for a, b in zip(starts, stops, strict=True)]
    else:
        out[:] = [payload[a:b].decode("utf-8") for a, b in zip(starts, stops, strict=True)]
    if (lengths < 0).any():
        out[lengths < 0] = None
    return out, 4 * n + total


def encode(columns: Mapping[str, np.ndarray], keys: int) -> bytes:
    """``columns`` (name -> 1-d int64, bool or object-of-str array) as one blob."""
    parts = [_HEADER.pack(MAGIC, VERSION, keys, len(columns))]
    for name, col in columns.items():
        raw = name.encode("utf-8")
        col = np.asarray(col)
        if col.dtype == np.bool_:
            code, body = b"?", col.astype(np.uint8).tobytes()
        elif col.dtype.kind in "iu":
            code, body = b"q", col.astype("<i8").tobytes()
        elif col.dtype == object or col.dtype.kind == "U":
            code, body = b"s", _encode_strings(col.astype(object))
        else:
            raise TypeError(f"column {name}: cannot encode dtype {col.dtype}")
        parts += [_COLUMN.pack(len(raw)), raw, code, _COUNT.pack(len(col)), body]
    return b"".join(parts)


def key_count(blob: bytes | bytearray | memoryview) -> int:
    """The number of keys a blob holds (header only)."""
    magic, version, keys, _ = _HEADER.unpack_from(bytes(blob[: _HEADER.size]))
    if magic != MAGIC:
        raise ValueError("not a Statekeeper bucket state blob (bad magic)")
    if version != VERSION:
        raise ValueError(
            f"bucket state blob version {version} is not readable by this release (wants {VERSION})"
        )
    return int(keys)


def decode(blob: bytes | bytearray | memoryview) -> dict[str, np.ndarray]:
    """The columns of a blob (name -> numpy array), as :func:`encode` got them."""
    key_count(blob)  # checks magic and version
    buf = memoryview(bytes(blob))
    _, _, _, n_cols = _HEADER.unpack_from(buf)
    pos = _HEADER.size
    out: dict[str, np.ndarray] = {}
    for _ in range(n_cols):
        (name_len,) = _COLUMN.unpack_from(buf, pos)
        pos += 1
        name = bytes(buf[pos : pos + name_len]).decode("utf-8")
        pos += name_len
        code = bytes(buf[pos : pos + 1])
        (n,) = _COUNT.unpack_from(buf, pos + 1)
        pos += 1 + _COUNT.size
        if code == b"q":
            out[name] = np.frombuffer(buf[pos : pos + 8 * n], dtype="<i8").astype(np.int64)
            pos += 8 * n
        elif code == b"?":
            out[name] = np.frombuffer(buf[pos : pos + n], dtype=np.uint8).astype(bool)
            pos += n
        elif code == b"s":
            out[name], used = _decode_strings(buf[pos:], n)
            pos += used
        else:
            raise ValueError(f"bucket state blob: unknown column type {code!r}")
    return out
