"""Health figures recomputed only when the files they come from changed: memoised on the files'
stat (size, mtime), so a request over many jobs with long histories costs a few small reads per
job. Files on an object store are never memoised (their stat costs a request)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

_memo: dict[tuple[str, str], tuple[Any, Any]] = {}


REMOTE = None  # the signature of a file on an object store: never memoised


def stat(path: Path | None) -> tuple[int, int] | None:
    """(mtime, size) of a local file, (0, -1) when it does not exist, REMOTE for a URL."""
    if path is None:
        return REMOTE
    try:
        st = os.stat(path)
    except OSError:
        return 0, -1
    return st.st_mtime_ns, st.st_size


def memoised(kind: str, key: str, signature: Any, compute) -> Any:
    """``compute()`` again only when the files' ``signature`` changed (always for remote files,
    whose stat costs a request)."""
    if signature is REMOTE or (isinstance(signature, tuple) and REMOTE in signature):
        return compute()
    hit = _memo.get((kind, key))
    if hit is not None and hit[0] == signature:
        return hit[1]
    value = compute()
    _memo[(kind, key)] = (signature, value)
    return value


# -- job specs -----------------------------------------------------------------------------------
