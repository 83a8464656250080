"""The per-key state blobs of earlier releases (``sessions binary`` / ``failures binary``): a
version byte, then compact JSON of plain lists/ints/strs/None. Read only by the migration rules
that turn them into today's typed state rows (``JobDef.state_rules``, ``upgrade migrate``);
:func:`encode` stays so tests can write such a blob as those releases did.

JSON, not pickle: a checkpoint is data, and whoever can write to it must not be able to run code
on the executors that read it. Tuples come back as lists; the logic's ``from_tuple`` readers
accept either. The version byte lets a later release read (or refuse with a clear reason) what
an earlier one wrote; version 1 was pickle and is refused unread.
"""

from __future__ import annotations

import json
from typing import Any

VERSION = 2


def encode(value: Any) -> bytes:
    return bytes([VERSION]) + json.dumps(value, separators=(",", ":")).encode("utf-8")


def decode(blob: bytes | bytearray | memoryview | None) -> Any:
    if blob is None:
        return None
    data = bytes(blob)
    if not data:
        return None
    if data[0] != VERSION:
        raise ValueError(
            f"state blob version {data[0]} is not readable by this release (wants {VERSION}); "
            "version 1 state (pickle) is never loaded: run this job on a new checkpoint"
        )
    return json.loads(data[1:].decode("utf-8"))
