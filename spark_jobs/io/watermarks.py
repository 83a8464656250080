"""A job's event-time watermark, set where its parsed lines are shuffled rather than above.

Spark's watermark node (``EventTimeWatermarkExec``) reports no output partitioning, so a
stateful operator above it always gets a shuffle of its own, even when the rows below were
already partitioned on its keys. Set above the parsed lines' one shuffle
(:func:`spark_jobs.io.events.shared`), every batch was shuffled twice: on 1M clickstream events,
``run sessions``' first batch spent 0.95 s (1.6 s of task time) in a stage that only moved rows
from the first shuffle to the second. Set below it (:func:`before_shuffle`), the operator reads
the one shuffle directly.

Both the good and the bad side read that shuffle, so bad lines pass the watermark node too. The
parse nulls a bad line's event time (:mod:`spark_jobs.io.batch_clock`): a quarantined line must
never move the watermark (one dated a year ahead would make every later event late). Spark
counts the null as epoch 0, which leaves the watermark alone (it comes from the max) but not the
batch's reported min and avg; the good events' own figures are observed by the parse and
restored into the progress record (:mod:`spark_jobs.runtime.event_time_stats`).

A job's own code asks for its watermark with :func:`on`, which adds none where the runner
already set it: the same build works in the runner and on a plain stream.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spark_jobs.contract.durations import spark_interval

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


def before_shuffle(parsed: DataFrame, column: str, seconds: float) -> DataFrame:
    """``parsed`` (:func:`spark_jobs.io.events.parse_lines`, whose bad lines' ``column`` is NULL
    and which observes the good ones' event-time figures) with the watermark on ``column``."""
    return parsed.withWatermark(column, spark_interval(seconds))
