"""``dedup_events``: the clickstream without re-sent events (built-in
dropDuplicatesWithinWatermark on event_id)."""

from __future__ import annotations

from typing import Any

from spark_jobs.contract.durations import spark_interval

SINK = "append"


def build(spark: Any, spec: Any, events: dict[str, Any]) -> Any:
    return (
        events["clickstream"]
        .withWatermark("event_time", spark_interval(spec.watermark_seconds))
        .dropDuplicatesWithinWatermark(["event_id"])
    )
