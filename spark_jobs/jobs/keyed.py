"""The batched executor: many keys per Python call, per-key semantics kept exactly.

Spark's per-key ``applyInPandasWithState`` crosses into Python (Arrow batch, pandas frame, state
row) once per key per micro-batch; with many small keys that overhead is the whole cost. Here
keys are grouped into ``params.buckets`` hash buckets (``pmod(xxhash64(key), buckets)``, computed
in Spark) under one ``applyInPandasWithState`` keyed by bucket, and the bucket's function runs
the job's logic for the bucket's keys together (``spark_jobs.state.*_bulk``).

Per-key semantics inside a bucket:

- state per key, stored together as one compact binary blob (:mod:`spark_jobs.state.columnar`),
  with the bucket's key count beside it (state schema ``keys int, blob binary``);
- a timeout per key; the bucket's event-time timeout is the earliest key deadline, so Spark
  calls the bucket whenever any key would have been called;
- on a call (new data or timeout) exactly the keys Spark would have called are processed: keys
  with new rows, and keys whose deadline is before the watermark; the rest are left untouched;
- the bucket's state is removed when no key remains; late rows are dropped by Spark before the
  call, exactly as for the per-key operator (same operator, same watermark).

State inspection: Spark's state reader shows one row per bucket (``key._bucket``,
``value.keys``, ``value.blob``); :func:`spark_jobs.state.columnar.bucket_key_count` turns a
bucket's value into its number of keys.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from spark_jobs.contract.errors import UserError
from spark_jobs.io import key_metrics
from spark_jobs.io.tables import columns
from spark_jobs.state.columnar import BUCKET

DEFAULT_BUCKETS = 256
STATE_SCHEMA = "keys int, blob binary"
# batched_sessions ships event_type as an index into this (3: any other type)
EVENT_TYPES = np.array(["page_view", "purchase", "checkout", "other"], dtype=object)


def bucket_count(spec: Any) -> int:
    raw = spec.params.get("buckets", DEFAULT_BUCKETS)
    try:
        n = int(raw)
    except (TypeError, ValueError):
        n = 0
    if n < 1:
        raise UserError(
            f"job {spec.name}: params.buckets must be a positive integer, not {raw!r}; fix {spec.path}"
        )
    return n


def bucketed(
    stream: Any, key: str, input_columns: list[Any], spec: Any, func: Any, output: str
) -> Any:
    """``stream`` grouped by the hash bucket of ``key``, ``func`` applied per bucket."""
    from pyspark.sql import functions as F

    n = bucket_count(spec)
    bucket = F.pmod(F.xxhash64(F.col(key)), F.lit(n)).cast("int").alias(BUCKET)
    return (
        stream.select(bucket, *input_columns)
        .groupBy(BUCKET)
        .applyInPandasWithState(func, output, STATE_SCHEMA, "append", "EventTimeTimeout")
    )


def _save(state: Any, keys: int, blob: bytes, timeout: int | None) -> None:
    if timeout is None:
        state.remove()
        return
    state.update((int(keys), blob))
    state.setTimeoutTimestamp(int(timeout))


# -- sessions -----------------------------------------------------------------------------------
def sessions_events(df: Any) -> Any:
    """A pandas frame of clickstream rows as :class:`sessions_bulk.Events`."""
    from spark_jobs.jobs.pandas_io import to_ms
    from spark_jobs.state.sessions_bulk import Events

    dur = df["duration_sec"].to_numpy(dtype="float64", na_value=np.nan)
    return Events(
        key=df["user_id"].to_numpy(dtype=object),
        t=to_ms(df["event_time"]),
        eid=df["event_id"].to_numpy(dtype=object),
        etype=EVENT_TYPES[df["event_type"].to_numpy(dtype=np.int64)],
        page=df["page"].astype(object).where(df["page"].notna(), None).to_numpy(dtype=object),
        dur=np.where(np.isnan(dur), 0, dur).astype(np.int64),
    )


def make_sessions_update(gap_ms: int, max_pages: int):
    def update_session_bucket(key: tuple, pdfs: Iterator[Any], state: Any) -> Iterator[Any]:
        from spark_jobs.jobs.pandas_io import concat
        from spark_jobs.state import sessions_bulk as bulk

        prev = bulk.Sessions.decode(state.get[1]) if state.exists else bulk.Sessions.empty()
        events = bulk.Events.empty()
        if not state.hasTimedOut:
            df = concat(pdfs)
            if df is not None:
                events = sessions_events(df)
        closed, still, timeout = bulk.update_bucket(
            events, prev, state.getCurrentWatermarkMs(), gap_ms, max_pages
        )
        _save(state, still.key_count(), still.encode() if timeout is not None else b"", timeout)
        if len(closed):
            yield key_metrics.with_null_metrics(sessions_frame(bulk.output_columns(closed)))
        before, after = set(prev.key.tolist()), set(still.key.tolist())
        touched = (set(events.key.tolist()) | set(closed.key.tolist())) & after
        # sessions never drop a user by logic: a user leaves when its last session closes
        yield key_metrics.frame("sessions", len(after) - len(before), len(touched), 0,
                                len(before - after))  # fmt: skip

    return update_session_bucket


def sessions_frame(cols: dict[str, list]) -> Any:
    """Output columns (times in epoch ms) as the frame the sessions job emits."""
    import pandas as pd

    df = pd.DataFrame(cols, columns=columns("sessions"))
    for c in ("session_start", "session_end"):
        df[c] = pd.to_datetime(df[c], unit="ms", utc=True)
    return df


def batched_sessions(stream: Any, spec: Any, gap_ms: int, max_pages: int) -> Any:
    from pyspark.sql import functions as F

    from spark_jobs.state.sessions import CHECKOUT, PAGE_VIEW, PURCHASE

    # event_id and page matter only for page views (last_pages and its order): others ship nulls,
    # which shrinks the shuffle and the Arrow batches without changing any result
    et = F.col("event_type")
    pv = et == PAGE_VIEW
    code = F.when(pv, 0).when(et == PURCHASE, 1).when(et == CHECKOUT, 2).otherwise(3)
    cols = [
        "user_id", "event_time", F.when(pv, F.col("event_id")).alias("event_id"),
        code.cast("tinyint").alias("event_type"),  # the logic asks only which of three it is
        F.when(pv, F.col("page")).alias("page"), "duration_sec",
    ]  # fmt: skip
    return bucketed(
        stream, "user_id", cols, spec, make_sessions_update(gap_ms, max_pages),
        key_metrics.output_schema("sessions"),
    )  # fmt: skip


# -- ordered mode: events held until the watermark passes them (spark_jobs.state.ordered) ------
def make_ordered_update(job: str, step: Any, to_events: Any, emit: Any) -> Any:
    """The bucket function for a job whose logic must see events in event-time order.

    ``step`` is the job's :class:`spark_jobs.state.ordered.Step`; ``to_events(frame)`` turns a
    pandas frame of input rows into columns ``key``, ``t`` (epoch ms), ``eid`` and the payload;
    ``emit(rows)`` yields the output frames. Each call also yields its metric row
    (:mod:`spark_jobs.io.key_metrics`).
    """

    def update_ordered_bucket(key: tuple, pdfs: Iterator[Any], state: Any) -> Iterator[Any]:
        from spark_jobs.jobs.pandas_io import concat
        from spark_jobs.state import columnar, ordered

        prev = columnar.decode(state.get[1]) if state.exists and len(state.get[1]) else None
        new = None
        if not state.hasTimedOut:
            df = concat(pdfs)
            if df is not None:
                new = to_events(df)
        rows, cols, keys, timeout, c = ordered.bucket_step(
            step, prev, new, state.getCurrentWatermarkMs()
        )
        if cols is None:
            state.remove()
        else:
            state.update((int(keys), columnar.encode(cols, keys)))
            if timeout is not None:
                state.setTimeoutTimestamp(int(timeout))
        for df in emit(rows):
            yield key_metrics.with_null_metrics(df)
        yield key_metrics.frame(job, c.after - c.before, c.updated, c.removed, c.expired)

    return update_ordered_bucket
