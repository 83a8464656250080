"""The pipelines a user would hand-write with Spark's built-in operators instead of Statekeeper's
jobs: the other side of every ratio the benchmarks print (in-session and whole-process)."""

from __future__ import annotations

from typing import Any

from spark_jobs.contract.spec import JobSpec


def sessions_builtin(events: Any, spec: JobSpec) -> Any:
    """What a user would write with Spark's built-in session windows to produce the ``sessions``
    table from a stream of typed clickstream events: same gap and watermark, and every output
    column of the contract, ``last_pages`` and ``session_id`` included, so the two jobs do the
    same work and their tables can be compared row for row. Spark's session ends at the last
    event + gap; the contract's ``session_end`` is the last event, hence ``max(event_time)``."""
    from pyspark.sql import functions as F

    from spark_jobs.contract.durations import spark_interval
    from spark_jobs.jobs.sessions import Params

    p = Params.of(spec)
    max_pages = p.last_pages
    good = events.withWatermark("event_time", spark_interval(spec.watermark_seconds))
    s = F.session_window("event_time", spark_interval(p.gap))
    et = F.col("event_type")
    page_view = F.when(
        (et == "page_view") & F.col("page").isNotNull(),
        F.struct("event_time", "event_id", "page"),
    )
    pages = F.sort_array(F.col("pages"))  # (time, event_id, page) order, as the job keeps them
    last = F.slice(pages, F.greatest(F.size(pages) - (max_pages - 1), F.lit(1)), max_pages)
    start_ms = F.unix_millis(F.col("s.start")).cast("string")
    return (
        good.groupBy("user_id", s.alias("s"))
        .agg(
            F.max("event_time").alias("session_end"),
            F.count(F.lit(1)).alias("events"),
            F.sum((et == "page_view").cast("long")).alias("page_views"),
            F.sum(F.coalesce("duration_sec", F.lit(0))).alias("total_duration_sec"),
            F.collect_list(page_view).alias("pages"),
            F.max(et == "purchase").alias("purchased"),
            F.max(et == "checkout").alias("checkout_viewed"),
        )
        .select(
            "user_id",
            F.substring(F.sha1(F.concat_ws("|", "user_id", start_ms)), 1, 20).alias("session_id"),
            F.col("s.start").alias("session_start"),
            "session_end",
            "events",
            "page_views",
            "total_duration_sec",
            F.transform(last, lambda p: p["page"]).alias("last_pages"),
            "purchased",
            "checkout_viewed",
        )
    )


def fraud_builtin(events: Any, spec: JobSpec, slide_seconds: float | None = None) -> Any:
    """What a user would write with Spark's window aggregation for brute-force alerts over a
    stream of typed auth events: failures counted per user in windows of the job's
    ``failure_gap`` (tumbling, or sliding by ``slide_seconds``), an alert per window with at
    least ``threshold`` of them. The contract's columns as far as windows give them:
    ``alert_time`` is the window's last failure, ``first_failure_time`` its first, and
    ``distinct_ips`` exact (the job's is). Successes are not looked at (a window cannot reset a
    count), which is why it is an approximation and why it only reads the failures."""
    from pyspark.sql import functions as F

    from spark_jobs.contract.durations import spark_interval
    from spark_jobs.jobs.fraud_alerts import Params

    p = Params.of(spec)
    good = events.withWatermark("event_time", spark_interval(spec.watermark_seconds))
    size = spark_interval(p.failure_gap)
    w = F.window("event_time", size, spark_interval(slide_seconds) if slide_seconds else size)
    return (
        good.where(F.col("event_type") == "LOGIN_FAILED")
        .groupBy("user_id", w.alias("w"))
        .agg(
            F.max("event_time").alias("alert_time"),
            F.min("event_time").alias("first_failure_time"),
            F.count(F.lit(1)).alias("failed_attempts"),
            F.size(F.collect_set("ip")).cast("long").alias("distinct_ips"),
        )
        .where(F.col("failed_attempts") >= p.threshold)
        .select("user_id", "alert_time", "first_failure_time", "failed_attempts", "distinct_ips")
    )


FRAUD_SLIDE_SECONDS = 60.0  # the sliding variant: a window of failure_gap every minute


def fraud_sliding_builtin(events: Any, spec: JobSpec) -> Any:
    """:func:`fraud_builtin` with windows sliding by :data:`FRAUD_SLIDE_SECONDS`: a burst is
    never split by a window edge, at the price of every failure counting in
    ``failure_gap / slide`` windows (10 with the default gap)."""
    return fraud_builtin(events, spec, FRAUD_SLIDE_SECONDS)


# ``python -m bench.builtin_pipeline``'s variants: name -> the built-in pipeline
PIPELINES = {
    "sessions": sessions_builtin,
    "fraud_alerts": fraud_builtin,
    "fraud_alerts_sliding": fraud_sliding_builtin,
}
