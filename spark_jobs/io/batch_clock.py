"""The checks of a parsed line that read the batch's clock, kept out of the parse's own code.

In a streaming query, ``current_timestamp()`` is the batch's timestamp (kept in the offset log,
so a replayed batch judges its lines alike), and Spark writes it into the batch's generated Java
code as a constant. Every batch then has new code for each stage that reads it, and compiles it
again, twice (the driver and the task each compile; they keep separate caches). Read inside the
parse (:func:`spark_jobs.io.events.parse_lines`), that was the parse's stage, 116 KB of Java
source: 40 to 180 ms of compiling per copy, in every batch of a continuous run, and code the JVM
never got to optimise, since each batch's class was new.

So the parse judges everything but the clock, and this module's one projection does the rest:
"more than ``max_future`` ahead of the clock", the bad line's raw text and file, and the time it
is quarantined at. A ``Dataset.observe`` sits between the two, and Spark's generated code cannot
span it, so the projection is a stage of its own: a few KB compiled per batch. The observe has
its own use: the good events' event-time figures (:mod:`spark_jobs.runtime.event_time_stats`),
which need the clock's verdict.
"""

from __future__ import annotations

import operator
import time
from functools import reduce
from typing import TYPE_CHECKING

from spark_jobs.contract.durations import spark_interval
from spark_jobs.io.event_kinds import EVENT_TIME, fields
from spark_jobs.runtime.event_time_stats import METRIC_PREFIX

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

# What a line carries out of the parse for this stage: its text and file, for a line bad or
# maybe ahead of the clock (:func:`may_be_ahead`); the bad ones' go on as _raw and _source_file
VALUE, SOURCE_FILE = "value", "source_file"


def future_limit(
    max_future_seconds: float, admitted_ms: int | None = None, clock: Column | None = None
) -> Column:
    """The latest event time that is not "in the future": ``clock`` (default: the batch's)
    plus ``max_future_seconds``, and never earlier than ``admitted_ms``, the newest event time
    the job already admitted (an event no later than one already in its state is not from the
    future, whatever the clock says now)."""
    from pyspark.sql import functions as F

    now = F.current_timestamp() if clock is None else clock
    limit = now + F.make_dt_interval(secs=F.lit(max_future_seconds))
    if admitted_ms is None:
        return limit
    return F.greatest(limit, F.timestamp_millis(F.lit(int(admitted_ms))))


def may_be_ahead(
    kind: str,
    max_future_seconds: float,
    admitted_ms: int | None,
    clock_floor_ms: int | None = None,
) -> Column:
    """Whether a line's timestamps could be ahead of some batch's :func:`future_limit`, decided
    without the batch's clock, so the parse can ask it: the limit is never below
    ``clock_floor_ms`` (the earliest clock of a batch the query will run, default now) plus
    ``max_future_seconds``. The parse keeps such a line's text for the clock's verdict; the
    others (nearly all) cross no text to it."""
    from pyspark.sql import functions as F

    floor = time.time_ns() // 1_000_000 if clock_floor_ms is None else clock_floor_ms
    # literals only: the optimizer folds the bound to one constant, the same in every batch
    bound = future_limit(max_future_seconds, admitted_ms, F.timestamp_millis(F.lit(floor)))
    ahead = [F.col(f.name) > bound for f in fields(kind) if f.type == "ts"]
    return F.coalesce(reduce(operator.or_, ahead), F.lit(False))


def future_reason(name: str, max_future_seconds: float) -> str:
    return f"field {name} is more than {spark_interval(max_future_seconds)} ahead of the clock"


def judged(
    checked: DataFrame,
    kind: str,
    raw: Column,
    max_future_seconds: float,
    admitted_ms: int | None,
) -> DataFrame:
    """``checked`` (the parse's typed fields, ``_reason`` from everything but the clock,
    :data:`VALUE` and :data:`SOURCE_FILE` where :func:`may_be_ahead`) -> the typed fields plus
    ``_reason``, ``_raw`` (``raw``, the text a bad line is kept as), ``_source_file`` and
    ``_quarantined_at``, the last three set for bad lines only. A bad line's timestamps are
    nulled: the watermark is taken over every line that reaches it
    (:mod:`spark_jobs.io.watermarks`), and a quarantined one must never move it.

    The good events' event-time figures are observed here, before the projection (see the
    module's docstring), as ``METRIC_PREFIX<kind>``."""
    from pyspark.sql import functions as F

    limit = future_limit(max_future_seconds, admitted_ms)
    times = [f.name for f in fields(kind) if f.type == "ts"]
    reason = F.col("_reason")
    # A line the parse passed has a real instant in each timestamp field.
    for name in reversed(times):
        late = F.lit(future_reason(name, max_future_seconds))
        reason = F.when(F.col("_reason").isNull() & (F.col(name) > limit), late).otherwise(reason)
    good = reason.isNull()
    ms = F.unix_millis(F.col(EVENT_TIME))  # every kind's event time
    observed = checked.observe(
        METRIC_PREFIX + kind,
        F.max(F.when(good, ms)).alias("max"),
        F.min(F.when(good, ms)).alias("min"),
        F.avg(F.when(good, ms)).alias("avg"),
        F.count(F.when(good, ms)).alias("count"),
    )
    names = [f.name for f in fields(kind)]
    verdict = observed.select(*names, reason.alias("_reason"), VALUE, SOURCE_FILE)
    bad = F.col("_reason").isNotNull()
    return verdict.select(
        *[F.when(~bad, F.col(n)).alias(n) if n in times else F.col(n) for n in names],
        "_reason",
        F.when(bad, F.make_valid_utf8(raw)).alias("_raw"),
        F.when(bad, F.col(SOURCE_FILE)).alias("_source_file"),
        F.when(bad, F.current_timestamp()).alias("_quarantined_at"),
    )
