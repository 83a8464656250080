"""``dedup_events``: the clickstream without re-sent events (built-in
dropDuplicatesWithinWatermark on event_id)."""

from __future__ import annotations

from typing import Any

from spark_jobs.io import watermarks
from spark_jobs.jobs.declaration import JobDef, grouped_by, watermarked


def build(spark: Any, spec: Any, events: dict[str, Any]) -> Any:
    stream = watermarks.on(events["clickstream"], "event_time", spec.watermark_seconds)
    return stream.dropDuplicatesWithinWatermark(["event_id"])


JOB = JobDef(
    name="dedup_events",
    inputs=("clickstream",),
    schema=(
        "event_id string, user_id string, event_type string, page string, duration_sec bigint, "
        "event_time timestamp"
    ),
    keys=("event_id",),
    time_column="event_time",
    build=build,
    shuffle_keys=grouped_by({"clickstream": "event_id"}),
    watermarks=watermarked({"clickstream": "event_time"}),
)
