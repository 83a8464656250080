"""``sessions``: clickstream sessions with flatMapGroupsWithState semantics
(applyInPandasWithState, event-time timeout, append). Logic: :mod:`spark_jobs.state.sessions`
per key, :mod:`spark_jobs.state.sessions_bulk` for the batched executor."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

from pydantic import NonNegativeInt

from spark_jobs.io import key_metrics, watermarks
from spark_jobs.jobs import keyed
from spark_jobs.jobs.declaration import Duration, JobDef, StateRule, watermarked
from spark_jobs.state import buckets
from spark_jobs.state.sessions import BUCKET_COLUMNS, STATE_SCHEMA, from_json_state

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql.streaming.state import GroupState

SCHEMA = (
    "user_id string, session_id string, session_start timestamp, session_end timestamp, "
    "events bigint, page_views bigint, total_duration_sec bigint, last_pages array<string>, "
    "purchased boolean, checkout_viewed boolean"
)
BUCKET_SCHEMA = buckets.schema(BUCKET_COLUMNS)  # the batched executor's state row
INPUT_COLUMNS = ["user_id", "event_time", "event_id", "event_type", "page", "duration_sec"]
TS_COLUMNS = ("session_start", "session_end")
# the batched executor ships event_type as an index into this (3: any other type)
EVENT_TYPES = ("page_view", "purchase", "checkout", "other")


class Params(keyed.BatchedParams):
    gap: Duration  # a session is a run of a user's events at most this far apart
    last_pages: NonNegativeInt = 10  # the pages of the last this many page views


def update_sessions(
    gap_ms: int,
    max_pages: int,
    columns: list[str],
    key: tuple[str],
    pdfs: Iterator[pd.DataFrame],
    state: GroupState,
) -> Iterator[pd.DataFrame]:
    """The per-key function of applyInPandasWithState, bound to the job's parameters with
    ``functools.partial``. A timed-out key is called with no rows: its open sessions close."""
    from spark_jobs.jobs.pandas_io import concat, emit, to_ms, values
    from spark_jobs.state import sessions as logic

    events: list = []
    if state.hasTimedOut:
        pass  # no rows: the watermark passed the newest session's end + gap
    elif (df := concat(pdfs)) is not None:
        t = to_ms(df["event_time"])
        page, dur = values(df["page"]), values(df["duration_sec"])
        events = list(zip(t.tolist(), df["event_id"], df["event_type"], page, dur, strict=True))
    had = state.exists
    prev = logic.from_state_row(state.get) if had else []
    rows, still, timeout = logic.update(
        key[0], events, prev, state.getCurrentWatermarkMs(), gap_ms, max_pages
    )
    if still:
        assert timeout is not None  # an open session always has its deadline (end + gap)
        state.update((logic.state_row(still)["sessions"],))
        state.setTimeoutTimestamp(timeout)
    else:
        state.remove()
    for df in emit(rows, columns, TS_COLUMNS):
        yield key_metrics.with_null_metrics(df)
    # a user leaves the state only when its last session closes: expired, never removed
    touched = int(bool(still) and bool(events or rows))
    yield key_metrics.frame(
        columns, int(bool(still)) - int(had), touched, 0, int(had and not still)
    )


# -- the batched executor (spark_jobs.jobs.keyed): many users per Python call --------------------
def bulk_events(df: Any) -> Any:
    """A pandas frame of clickstream rows as :class:`sessions_bulk.Events`."""
    import numpy as np

    from spark_jobs.jobs.pandas_io import to_ms
    from spark_jobs.state.sessions_bulk import Events

    dur = df["duration_sec"].to_numpy(dtype="float64", na_value=np.nan)
    return Events(
        key=df["user_id"].to_numpy(dtype=object),
        t=to_ms(df["event_time"]),
        eid=df["event_id"].to_numpy(dtype=object),
        etype=np.array(EVENT_TYPES, dtype=object)[df["event_type"].to_numpy(dtype=np.int64)],
        page=df["page"].astype(object).where(df["page"].notna(), None).to_numpy(dtype=object),
        dur=np.where(np.isnan(dur), 0, dur).astype(np.int64),
    )


def update_session_bucket(
    gap_ms: int,
    max_pages: int,
    delay_ms: int,
    columns: list[str],
    key: tuple[int],
    pdfs: Iterator[pd.DataFrame],
    state: GroupState,
) -> Iterator[pd.DataFrame]:
    """The bucket function of the batched executor (:mod:`spark_jobs.jobs.keyed`), bound with
    ``functools.partial``. A timed-out bucket gets no rows: its keys past their deadline close.
    Sessions close against :func:`keyed.settled_until_ms` (the watermark this call's events
    already guarantee, ``delay_ms`` being the query's), not only Spark's current watermark: a
    catch-up's first batch emits every session its own events prove closed, the same rows the
    next batch would emit, instead of storing them in state and reading them back."""
    from spark_jobs.jobs.pandas_io import concat, with_metric_row
    from spark_jobs.state import sessions_bulk as bulk

    events = bulk.Events.empty()
    if state.hasTimedOut:
        pass  # no rows: the earliest key deadline in the bucket has passed
    elif (df := concat(pdfs)) is not None:
        events = bulk_events(df)
    prev = bulk.Sessions.from_columns(keyed.load(state, bulk.BUCKET_COLUMNS))
    settled = keyed.settled_until_ms(state.getCurrentWatermarkMs(), events.t, delay_ms)
    closed, still, timeout = bulk.update_bucket(events, prev, settled, gap_ms, max_pages)
    stored = still.columns() if timeout is not None else None
    keyed.save(state, bulk.BUCKET_COLUMNS, stored, still.key_count(), timeout)
    before, after = set(prev.key.tolist()), set(still.key.tolist())
    touched = (set(events.key.tolist()) | set(closed.key.tolist())) & after
    # sessions never drop a user by logic: a user leaves when its last session closes
    metric = key_metrics.counts(len(after) - len(before), len(touched), 0, len(before - after))
    out = bulk.output_columns(closed) if len(closed) else None
    yield with_metric_row(out, columns, TS_COLUMNS, key_metrics.COLUMN, metric)


def batched(stream: Any, p: Params, gap_ms: int, delay_ms: int, columns: list[str]) -> Any:
    from pyspark.sql import functions as F

    from spark_jobs.state.sessions import CHECKOUT, PAGE_VIEW, PURCHASE

    # event_id and page matter only for page views (last_pages and its order): others ship nulls,
    # which shrinks the shuffle and the Arrow batches without changing any result
    et = F.col("event_type")
    pv = et == PAGE_VIEW
    code = F.when(pv, 0).when(et == PURCHASE, 1).when(et == CHECKOUT, 2).otherwise(3)
    cols = [
        "user_id",
        "event_time",
        F.when(pv, F.col("event_id")).alias("event_id"),
        code.cast("tinyint").alias("event_type"),  # the logic asks only which of three it is
        F.when(pv, F.col("page")).alias("page"),
        "duration_sec",
    ]
    update = partial(update_session_bucket, gap_ms, p.last_pages, delay_ms, columns)
    return keyed.bucketed(stream, "user_id", cols, p.buckets, update, SCHEMA, BUCKET_SCHEMA)


def from_bucket_blob(old: dict[str, Any]) -> dict[str, Any] | None:
    """The rule for buckets of earlier releases (:func:`sessions_bulk.from_bucket_blob`)."""
    from spark_jobs.state import sessions_bulk

    return sessions_bulk.from_bucket_blob(old)


def build(spark: Any, spec: Any, events: dict[str, Any]) -> Any:
    p = Params.of(spec)
    gap_ms = int(p.gap * 1000)
    columns = JOB.columns
    stream = watermarks.on(events["clickstream"], "event_time", spec.watermark_seconds)
    if spec.executor == "batched":
        return batched(stream, p, gap_ms, keyed.delay_ms(spec), columns)
    return (
        stream.select(*INPUT_COLUMNS)
        .groupBy("user_id")
        .applyInPandasWithState(
            partial(update_sessions, gap_ms, p.last_pages, columns),
            key_metrics.output_schema(SCHEMA),
            STATE_SCHEMA,
            "append",
            "EventTimeTimeout",
        )
    )


JOB = JobDef(
    name="sessions",
    inputs=("clickstream",),
    schema=SCHEMA,
    keys=("session_id",),
    time_column="session_end",
    build=build,
    shuffle_keys=keyed.shuffle_keys("clickstream", "user_id", Params),
    watermarks=watermarked({"clickstream": "event_time"}),
    state_key=("user_id",),
    settles_after=lambda spec: Params.of(spec).gap,
    params=Params,
    state_schema=STATE_SCHEMA,
    # state of earlier releases: one JSON blob per user (spark_jobs.state.codec)
    bucket_state_schema=BUCKET_SCHEMA,
    state_rules=(
        StateRule("sessions binary", from_json_state),
        StateRule(buckets.BLOB_SCHEMA, from_bucket_blob),
    ),
)
