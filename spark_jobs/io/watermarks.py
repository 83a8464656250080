"""A job's event-time watermark, set where its parsed lines are shuffled rather than above.

Spark's watermark node (``EventTimeWatermarkExec``) reports no output partitioning, so a
stateful operator above it always gets a shuffle of its own, even when the rows below were
already partitioned on its keys. Set above the parsed lines' one shuffle
(:func:`spark_jobs.io.events.shared`), every batch was shuffled twice: on 1M clickstream events,
``run sessions``' first batch spent 0.95 s (1.6 s of task time) in a stage that only moved rows
from the first shuffle to the second. Set below it (:func:`before_shuffle`), the operator reads
the one shuffle directly.

Both the good and the bad side read that shuffle, so bad lines pass the watermark node too. A
bad line's event time is nulled first: a quarantined line must never move the watermark (one
dated a year ahead would make every later event late). Spark counts the null as epoch 0, which
leaves the watermark alone (it comes from the max) but not the batch's reported min and avg;
the good events' own figures are observed here and restored into the progress record
(:mod:`spark_jobs.runtime.event_time_stats`).

A job's own code asks for its watermark with :func:`on`, which adds none where the runner
already set it: the same build works in the runner and on a plain stream.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spark_jobs.contract.durations import spark_interval
from spark_jobs.runtime.event_time_stats import METRIC_PREFIX

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

# The field metadata Spark's withWatermark gives its event-time column (EventTimeWatermark.delayKey)
DELAY_KEY = "spark.watermarkDelayMs"
# Spark's refusal of a second watermark on one stream (what :func:`on` avoids)
REDEFINED = "Redefining watermark is disallowed"


def has_watermark(df: DataFrame, column: str) -> bool:
    """Whether ``column`` of ``df`` carries a watermark (set anywhere below ``df``)."""
    return DELAY_KEY in df.schema[column].metadata


def on(df: DataFrame, column: str, seconds: float) -> DataFrame:
    """``df`` with a watermark of ``seconds`` on ``column``, unless ``column`` has one already
    (the runner's, :func:`before_shuffle`): Spark refuses a query that sets it twice
    (:data:`REDEFINED`)."""
    if has_watermark(df, column):
        return df
    return df.withWatermark(column, spark_interval(seconds))


def before_shuffle(parsed: DataFrame, kind: str, column: str, seconds: float) -> DataFrame:
    """``parsed`` (:func:`spark_jobs.io.events.parse_lines`) with the watermark on ``column``
    over good lines only: bad lines' ``column`` is nulled, and the good ones' event-time stats are
    observed for the progress record."""
    from pyspark.sql import functions as F

    good_time = F.when(F.col("_reason").isNull(), F.col(column))
    ms = F.unix_millis(F.col(column))
    marked = parsed.withColumn(column, good_time).observe(
        METRIC_PREFIX + kind,
        F.max(ms).alias("max"),
        F.min(ms).alias("min"),
        F.avg(ms).alias("avg"),
        F.count(ms).alias("count"),
    )
    return marked.withWatermark(column, spark_interval(seconds))
