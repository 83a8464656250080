"""What one progress record (the contract's typed ``BatchProgress``) says, as the numbers the
health page shows (pure functions).

State keys: an arbitrary-state job's record carries a top-level ``keys`` object counting user
keys; Spark's ``numRowsTotal`` counts state rows, which for the batched executor are hash
buckets, so it is only the fallback (builtin operators: one row per key, so it is right there).
"""

from __future__ import annotations

from typing import Any

from spark_jobs.contract.progress_log import BatchProgress, iso_seconds

EPOCH_ISO = "1970-01-01T00:00:00.000Z"  # Spark's watermark before the first one is set


def batch_duration_ms(rec: BatchProgress) -> float | None:
    return rec.duration_ms.get("triggerExecution")


def _iso_seconds(text: Any) -> float | None:
    return None if text == EPOCH_ISO else iso_seconds(text)


def watermark(rec: BatchProgress) -> str | None:
    """The watermark after this batch (ISO), None before the first one is set."""
    wm = rec.event_time.get("watermark")
    return wm if _iso_seconds(wm) is not None else None


def newest_event_seconds(rec: BatchProgress) -> float | None:
    """The newest event time the batch read (a batch without data has none)."""
    return _iso_seconds(rec.event_time.get("max"))


def watermark_delay_seconds(rec: BatchProgress, newest_event: float | None = None) -> float | None:
    """How far the watermark after this batch is behind the newest event seen so far
    (``newest_event``, else this batch's own newest event)."""
    wm = _iso_seconds(rec.event_time.get("watermark"))
    newest = newest_event if newest_event is not None else newest_event_seconds(rec)
    if newest is None or wm is None:
        return None
    return round(newest - wm, 3)


def points(records: list[BatchProgress]) -> list[dict[str, Any]]:
    """One chart point per batch record (oldest first); the watermark delay is measured against
    the newest event seen up to that batch, so batches without data still have one."""
    out, newest = [], None
    for rec in records:
        t = newest_event_seconds(rec)
        if t is not None:
            newest = t if newest is None else max(newest, t)
        out.append(point(rec, newest))
    return out


def source_lag(rec: BatchProgress) -> Any:
    """Per-source lag when the record carries one (a top-level ``lag``, or a Kafka source's
    ``maxOffsetsBehindLatest``); None when no source reports lag."""
    if rec.raw.get("lag") is not None:
        return rec.raw["lag"]
    lag = {}
    for src in rec.sources:
        behind = (src.get("metrics") or {}).get("maxOffsetsBehindLatest")
        if src.get("lag") is not None:
            lag[str(src.get("description"))] = src["lag"]
        elif behind is not None:
            lag[str(src.get("description"))] = int(float(behind))
    return lag or None


def point(rec: BatchProgress, newest_event: float | None = None) -> dict[str, Any]:
    """One batch record's chart point."""
    return {
        "t": rec.time,
        "batch": rec.batch_id,
        "input_rows": rec.num_input_rows,
        "input_rows_per_second": rec.input_rows_per_second,
        "processed_rows_per_second": rec.processed_rows_per_second,
        "batch_duration_ms": batch_duration_ms(rec),
        "state_keys": rec.state_keys,
        "state_memory_bytes": rec.state_memory_bytes,
        "watermark_delay_seconds": watermark_delay_seconds(rec, newest_event),
        "dropped_by_watermark": rec.dropped_by_watermark,
    }


# How a bucket of points becomes one: rates averaged, the worst duration, the last gauge, sums.
_MEAN = ("input_rows_per_second", "processed_rows_per_second")
_MAX = ("batch_duration_ms",)
_LAST = ("t", "batch", "state_keys", "state_memory_bytes", "watermark_delay_seconds")
_SUM = ("input_rows", "dropped_by_watermark")


def downsample(points: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """At most ``limit`` points: consecutive batches merged in equal-sized buckets."""
    if len(points) <= limit:
        return points
    out = []
    n = len(points)
    for i in range(limit):
        bucket = points[i * n // limit : (i + 1) * n // limit]
        merged: dict[str, Any] = {"batches": len(bucket)}
        for key in _MEAN:
            vals = [p[key] for p in bucket if p[key] is not None]
            merged[key] = round(sum(vals) / len(vals), 3) if vals else None
        for key in _MAX:
            vals = [p[key] for p in bucket if p[key] is not None]
            merged[key] = max(vals) if vals else None
        for key in _LAST:
            merged[key] = next((p[key] for p in reversed(bucket) if p[key] is not None), None)
        for key in _SUM:
            vals = [p[key] for p in bucket if p[key] is not None]
            merged[key] = sum(vals) if vals else None
        out.append(merged)
    return out
