"""A progress log read from its end: the newest records of a big ``progress.jsonl`` without
reading the rest.

A continuous job appends a 2-3 KB line every trigger, so a log grows to tens of MB; readers that
want the last batches (the health page, its API) read blocks backwards from the end and stop as
soon as they have enough. Remote logs (object stores) are read whole by ``progress.iter_progress``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from spark_jobs.contract import paths
from spark_jobs.runtime import progress

BLOCK = 64 * 1024


def record_time(rec: dict[str, Any]) -> float | None:
    """The batch's trigger time (Spark's ``timestamp``), epoch seconds; else when it was logged."""
    ts = rec.get("timestamp")
    if isinstance(ts, str):
        try:
            return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass  # not ISO time: fall back to when the line was logged
    logged = (rec.get("statekeeper") or {}).get("logged_at")
    return float(logged) if isinstance(logged, int | float) else None


def reverse_lines(path: Path, block: int = BLOCK) -> Iterator[bytes]:
    """The file's non-empty lines, last first, read in blocks from the end."""
    with open(path, "rb") as fh:
        pos = fh.seek(0, os.SEEK_END)
        rest = b""
        while pos > 0:
            step = min(block, pos)
            pos -= step
            fh.seek(pos)
            lines = (fh.read(step) + rest).split(b"\n")
            rest = lines[0]  # may be the end of a line that starts in the previous block
            for line in reversed(lines[1:]):
                if line.strip():
                    yield line
        if rest.strip():
            yield rest


def newest_records(
    checkpoint: str,
    limit: int | None = None,
    since: float | None = None,
    until: float | None = None,
    idle: bool = False,
) -> list[dict[str, Any]]:
    """Up to ``limit`` of the newest records with ``since <= time <= until``, oldest first.

    Records are appended in time order, so the backward read stops at the first one older than
    ``since``. Idle records are left out unless ``idle``.
    """
    out: list[dict[str, Any]] = []
    for rec in backwards(checkpoint):
        if not idle and progress.is_idle(rec):
            continue
        t = record_time(rec)
        if since is not None and t is not None and t < since:
            break
        if until is not None and t is not None and t > until:
            continue
        out.append(rec)
        if limit is not None and len(out) >= limit:
            break
    out.reverse()
    return out


def backwards(checkpoint: str) -> Iterator[dict[str, Any]]:
    """Every record of the log, idle ones included, newest first."""
    target = progress.progress_path(checkpoint)
    local = paths.local_path(target)
    if local is None:
        yield from reversed(list(progress.iter_progress(checkpoint)))
        return
    if not local.exists():
        return
    for line in reverse_lines(local):
        try:
            rec = json.loads(line)
        except ValueError:
            continue  # a line cut by a kill mid-write, or the one being written now
        if isinstance(rec, dict):
            yield rec
