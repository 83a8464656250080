"""The newest records of a progress log as logged (dicts), for the callers that return them as
they are; read through the contract's rotation-aware reader
(:class:`spark_jobs.contract.progress_log.ProgressLog`), across the rotated files."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from spark_jobs.contract.progress_log import (
    BatchProgress,
    Heartbeat,
    IdleEvent,
    ProgressLog,
    ProgressRecord,
)


def record_time(rec: dict[str, Any]) -> float | None:
    """The batch's trigger time (Spark's ``timestamp``), epoch seconds; else when it was logged."""
    parsed = ProgressRecord.from_json(rec)
    return parsed.time if parsed is not None else None


def newest_records(
    checkpoint: str,
    limit: int | None = None,
    since: float | None = None,
    until: float | None = None,
    idle: bool = False,
) -> list[dict[str, Any]]:
    """Up to ``limit`` of the newest records with ``since <= time <= until``, oldest first,
    exactly as logged; idle records only with ``idle``."""
    kinds: tuple[type[ProgressRecord], ...] = (BatchProgress, Heartbeat)
    if idle:
        kinds = (*kinds, IdleEvent)
    recs = ProgressLog(checkpoint).tail(limit, since=since, until=until, kinds=kinds)
    return [r.raw for r in recs]


def backwards(checkpoint: str) -> Iterator[dict[str, Any]]:
    """Every record of the log, idle ones included, newest first, as logged."""
    return (r.raw for r in ProgressLog(checkpoint).backwards())
