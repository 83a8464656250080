"""State blobs: a version byte, then pickle of plain tuples/lists/ints/strs (compact, fast).

State is written and read only by our own functions through Spark's checkpoint; the version byte
lets a later release read (or refuse with a clear reason) what an earlier one wrote.
"""

from __future__ import annotations

import pickle
from typing import Any

VERSION = 1


def encode(value: Any) -> bytes:
    return bytes([VERSION]) + pickle.dumps(value, protocol=5)


def decode(blob: bytes | bytearray | memoryview | None) -> Any:
    if blob is None:
        return None
    data = bytes(blob)
    if not data:
        return None
    if data[0] != VERSION:
        raise ValueError(
            f"state blob version {data[0]} is not readable by this release (wants {VERSION})"
        )
    return pickle.loads(data[1:])
