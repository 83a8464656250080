"""``windowed_counts``: events per event_type in tumbling event-time windows (built-in window
aggregation, append: a window is written once, when the watermark closes it)."""

from __future__ import annotations

from typing import Any

from spark_jobs.contract.durations import spark_interval
from spark_jobs.jobs.declaration import Duration, JobDef, JobParams


class Params(JobParams):
    window: Duration  # the tumbling window's length


def build(spark: Any, spec: Any, events: dict[str, Any]) -> Any:
    from pyspark.sql import functions as F

    window = spark_interval(Params.of(spec).window)
    return (
        events["clickstream"]
        .withWatermark("event_time", spark_interval(spec.watermark_seconds))
        .groupBy(F.window("event_time", window), "event_type")
        .count()
        .select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "event_type",
            F.col("count").cast("bigint").alias("count"),
        )
    )


JOB = JobDef(
    name="windowed_counts",
    inputs=("clickstream",),
    schema="window_start timestamp, window_end timestamp, event_type string, count bigint",
    keys=("window_start", "event_type"),
    time_column="window_end",
    build=build,
    additive={"count": "sum"},  # a backfill's counts add to the live window's
    params=Params,
)
