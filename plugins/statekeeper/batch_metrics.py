"""What one progress record says, as the numbers the health page shows (pure functions).

State keys: an arbitrary-state job's record carries a top-level ``keys`` object counting user
keys; Spark's ``numRowsTotal`` counts state rows, which for the batched executor are hash
buckets, so it is only the fallback (builtin operators: one row per key, so it is right there).
"""

from __future__ import annotations

from typing import Any

from spark_jobs.runtime.progress_tail import record_time

EPOCH_ISO = "1970-01-01T00:00:00.000Z"  # Spark's watermark before the first one is set


def _ops_sum(rec: dict[str, Any], key: str) -> int | None:
    ops = rec.get("stateOperators") or []
    if not ops:
        return None
    return sum(int(op.get(key) or 0) for op in ops)


def state_keys(rec: dict[str, Any]) -> int | None:
    keys = rec.get("keys")
    if isinstance(keys, dict) and keys.get("total") is not None:
        return int(keys["total"])
    return _ops_sum(rec, "numRowsTotal")


def state_memory_bytes(rec: dict[str, Any]) -> int | None:
    return _ops_sum(rec, "memoryUsedBytes")


def dropped_by_watermark(rec: dict[str, Any]) -> int | None:
    return _ops_sum(rec, "numRowsDroppedByWatermark")


def batch_duration_ms(rec: dict[str, Any]) -> float | None:
    dur = (rec.get("durationMs") or {}).get("triggerExecution", rec.get("batchDuration"))
    return float(dur) if isinstance(dur, int | float) else None


def _iso_seconds(text: Any) -> float | None:
    if not isinstance(text, str) or text == EPOCH_ISO:
        return None
    return record_time({"timestamp": text})


def watermark(rec: dict[str, Any]) -> str | None:
    """The watermark after this batch (ISO), None before the first one is set."""
    wm = (rec.get("eventTime") or {}).get("watermark")
    return wm if _iso_seconds(wm) is not None else None


def newest_event_seconds(rec: dict[str, Any]) -> float | None:
    """The newest event time the batch read (a batch without data has none)."""
    return _iso_seconds((rec.get("eventTime") or {}).get("max"))


def watermark_delay_seconds(rec: dict[str, Any], newest_event: float | None = None) -> float | None:
    """How far the watermark after this batch is behind the newest event seen so far
    (``newest_event``, else this batch's own newest event)."""
    wm = _iso_seconds((rec.get("eventTime") or {}).get("watermark"))
    newest = newest_event if newest_event is not None else newest_event_seconds(rec)
    if newest is None or wm is None:
        return None
    return round(newest - wm, 3)


def points(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One chart point per batch record (oldest first); the watermark delay is measured against
    the newest event seen up to that batch, so batches without data still have one."""
    out, newest = [], None
    for rec in records:
        t = newest_event_seconds(rec)
        if t is not None:
            newest = t if newest is None else max(newest, t)
        out.append(point(rec, newest))
    return out


def source_lag(rec: dict[str, Any]) -> Any:
    """Per-source lag when the record carries one (a top-level ``lag``, or a Kafka source's
    ``maxOffsetsBehindLatest``); None when no source reports lag."""
    if rec.get("lag") is not None:
        return rec["lag"]
    lag = {}
    for src in rec.get("sources") or []:
        behind = (src.get("metrics") or {}).get("maxOffsetsBehindLatest")
        if src.get("lag") is not None:
            lag[str(src.get("description"))] = src["lag"]
        elif behind is not None:
            lag[str(src.get("description"))] = int(float(behind))
    return lag or None


def point(rec: dict[str, Any], newest_event: float | None = None) -> dict[str, Any]:
    """One batch record's chart point."""
    return {
        "t": record_time(rec),
        "batch": rec.get("batchId"),
        "input_rows": rec.get("numInputRows"),
        "input_rows_per_second": rec.get("inputRowsPerSecond"),
        "processed_rows_per_second": rec.get("processedRowsPerSecond"),
        "batch_duration_ms": batch_duration_ms(rec),
        "state_keys": state_keys(rec),
        "state_memory_bytes": state_memory_bytes(rec),
        "watermark_delay_seconds": watermark_delay_seconds(rec, newest_event),
        "dropped_by_watermark": dropped_by_watermark(rec),
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
