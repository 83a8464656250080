"""``windowed_counts``: events per event_type in tumbling event-time windows (built-in window
aggregation, append: a window is written once, when the watermark closes it)."""

from __future__ import annotations

from typing import Any

from spark_jobs.contract.durations import spark_interval

SINK = "append"


def build(spark: Any, spec: Any, events: dict[str, Any]) -> Any:
    from pyspark.sql import functions as F

    window = spark_interval(spec.param_seconds("window"))
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
