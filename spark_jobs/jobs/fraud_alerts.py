"""``fraud_alerts``: brute-force login alerts (applyInPandasWithState, event-time timeout,
append). Logic: :mod:`spark_jobs.state.fraud`.

The logic acts per event (count, reset, alert), so its result depends on the order of events;
both executors therefore run in ordered mode (:mod:`spark_jobs.state.ordered`): events are held
in state until the watermark passes them and applied in (time, event_id) order then. An alert
is written once the watermark passes its ``threshold``-th failure, about the watermark delay
after it happened, and is the same however the events were split into runs and batches.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

from pydantic import PositiveInt

from spark_jobs.io import key_metrics, watermarks
from spark_jobs.jobs import keyed
from spark_jobs.jobs.declaration import Duration, JobDef, StateRule, watermarked
from spark_jobs.state import buckets
from spark_jobs.state.fraud import BUCKET_COLUMNS, STATE_SCHEMA, from_json_state

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql.streaming.state import GroupState

SCHEMA = (
    "user_id string, alert_time timestamp, first_failure_time timestamp, "
    "failed_attempts bigint, distinct_ips bigint, ips array<string>"
)
BUCKET_SCHEMA = buckets.schema(BUCKET_COLUMNS)  # the batched executor's state row
INPUT_COLUMNS = ["user_id", "event_time", "event_id", "event_type", "ip"]
TS_COLUMNS = ("alert_time", "first_failure_time")


class Params(keyed.BatchedParams):
    failure_gap: Duration  # a failure further than this after the last one starts a new count
    threshold: PositiveInt = 5  # the failure that raises an alert (and resets the count)


def to_events(df: Any) -> dict[str, Any]:
    """A frame of auth rows as the ordered executor's event columns."""
    from spark_jobs.jobs.pandas_io import to_ms

    return {
        "key": df["user_id"].to_numpy(dtype=object),
        "t": to_ms(df["event_time"]),
        "eid": df["event_id"].to_numpy(dtype=object),
        "etype": df["event_type"].to_numpy(dtype=object),
        "ip": df["ip"].to_numpy(dtype=object),
    }


def emit_alerts(columns: list[str], rows: list[dict]) -> Iterator[pd.DataFrame]:
    """The alert rows as output frames (the metric column null)."""
    from spark_jobs.jobs.pandas_io import emit

    for df in emit(rows, columns, TS_COLUMNS):
        yield key_metrics.with_null_metrics(df)


def update_failures(
    gap_ms: int,
    threshold: int,
    columns: list[str],
    key: tuple[str],
    pdfs: Iterator[pd.DataFrame],
    state: GroupState,
) -> Iterator[pd.DataFrame]:
    """The per-key function of applyInPandasWithState, bound to the job's parameters with
    ``functools.partial``; state is (the failure run, the events still held). A timed-out key
    gets no rows: the watermark released its held events or ended its run."""
    from spark_jobs.jobs.pandas_io import concat
    from spark_jobs.state import fraud as logic
    from spark_jobs.state import ordered

    new: list[tuple] = []
    if state.hasTimedOut:
        pass  # no rows: held events are due, or the run is over
    elif (df := concat(pdfs)) is not None:
        ev = to_events(df)
        new = list(zip(ev["t"].tolist(), ev["eid"], ev["etype"], ev["ip"], strict=True))
    wm = state.getCurrentWatermarkMs()
    prev, held = logic.from_state_row(state.get) if state.exists else (None, [])
    due, held = ordered.release_rows(held, new, wm)
    rows, st, deadline = logic.update(key[0], due, prev, gap_ms, threshold)
    over = st is not None and deadline is not None and deadline < wm
    if over:
        st, deadline = None, None  # the run is over: any later failure would reset it
    timeouts = [d for d in (deadline, min((h[0] for h in held), default=None)) if d]
    had, kept = state.exists, st is not None or bool(held)
    if not kept:
        state.remove()
    else:
        row = logic.state_row(st, held)
        state.update((row["run"], row["held"]))
        state.setTimeoutTimestamp(max(min(timeouts), wm + 1))
    yield from emit_alerts(columns, rows)
    gone = had and not kept
    # counted as the bucket executor counts: a run the watermark ended expired, a reset removed
    touched = int(kept and bool(new or due))
    yield key_metrics.frame(
        columns, int(kept) - int(had), touched, int(gone and not over), int(gone and over)
    )


def from_bucket_blob(old: dict[str, Any]) -> dict[str, Any] | None:
    """The rule for buckets of earlier releases (:func:`fraud_bulk.from_bucket_blob`)."""
    from spark_jobs.state import fraud_bulk

    return fraud_bulk.from_bucket_blob(old)


def build(spark: Any, spec: Any, events: dict[str, Any]) -> Any:
    p = Params.of(spec)
    gap_ms = int(p.failure_gap * 1000)
    columns = JOB.columns
    stream = watermarks.on(events["auth"], "event_time", spec.watermark_seconds)
    if spec.executor == "batched":
        from spark_jobs.state import fraud_bulk

        step = fraud_bulk.ordered_step(gap_ms, p.threshold)
        emit = partial(emit_alerts, columns)
        cols = BUCKET_COLUMNS
        delay = keyed.delay_ms(spec)
        update = partial(keyed.update_ordered_bucket, columns, cols, step, to_events, emit, delay)
        return keyed.bucketed(
            stream, "user_id", INPUT_COLUMNS, p.buckets, update, SCHEMA, BUCKET_SCHEMA
        )
    return (
        stream.select(*INPUT_COLUMNS)
        .groupBy("user_id")
        .applyInPandasWithState(
            partial(update_failures, gap_ms, p.threshold, columns),
            key_metrics.output_schema(SCHEMA),
            STATE_SCHEMA,
            "append",
            "EventTimeTimeout",
        )
    )


JOB = JobDef(
    name="fraud_alerts",
    inputs=("auth",),
    schema=SCHEMA,
    keys=("user_id", "alert_time"),
    time_column="alert_time",
    build=build,
    shuffle_keys=keyed.shuffle_keys("auth", "user_id", Params),
    watermarks=watermarked({"auth": "event_time"}),
    state_key=("user_id",),
    params=Params,
    state_schema=STATE_SCHEMA,
    state_format="ordered-v1",  # state written before ordered mode is refused, not misread
    # state of earlier releases: one JSON blob per user (spark_jobs.state.codec)
    bucket_state_schema=BUCKET_SCHEMA,
    state_rules=(
        StateRule("failures binary", from_json_state),
        StateRule(buckets.BLOB_SCHEMA, from_bucket_blob),
    ),
)
