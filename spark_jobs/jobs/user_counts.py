"""``user_counts``: running totals per user, one output per user per update (mapGroupsWithState
semantics), update mode, upserted into Delta. Logic: :mod:`spark_jobs.state.user_counts`.

The state holds the live totals; each update emits the batch's increments, which the upsert
sink adds to the table (idempotent per batch through Delta's txnAppId/txnVersion). The table
thus holds live totals plus whatever a backfill published (``spark_jobs.publish``, append)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from spark_jobs.io import key_metrics, watermarks
from spark_jobs.io.tables import column_names
from spark_jobs.jobs.declaration import JobDef, grouped_by, watermarked

SCHEMA = "user_id string, total_events bigint, purchases bigint, last_event_time timestamp"
COLUMNS = column_names(SCHEMA)
STATE_SCHEMA = "total_events long, purchases long, last_event_ms long"


def update_totals(key: tuple, pdfs: Iterator[Any], state: Any) -> Iterator[Any]:
    from spark_jobs.jobs.pandas_io import concat, emit, to_ms
    from spark_jobs.state import user_counts as logic

    prev = tuple(state.get) if state.exists else None
    df = concat(pdfs)
    events = (
        []
        if df is None
        else list(zip(to_ms(df["event_time"]).tolist(), df["event_type"], strict=True))
    )
    row, new = logic.update(key[0], events, prev)  # type: ignore[arg-type]
    state.update(new)
    # The row carries this batch's increments; the upsert sink adds them to the table's totals
    # (JOB.additive), so events a backfill added for this user stay counted.
    before = prev or (0, 0, 0)
    row["total_events"] -= before[0]
    row["purchases"] -= before[1]
    for out in emit([row], COLUMNS, ("last_event_time",)):
        yield key_metrics.with_null_metrics(out)
    # totals are kept forever (no timeout): a call adds a user or updates one
    yield key_metrics.frame(COLUMNS, int(prev is None), 1, 0, 0)


def build(spark: Any, spec: Any, events: dict[str, Any]) -> Any:
    stream = watermarks.on(events["clickstream"], "event_time", spec.watermark_seconds)
    return (
        stream.select("user_id", "event_time", "event_type")
        .groupBy("user_id")
        .applyInPandasWithState(
            update_totals,
            key_metrics.output_schema(SCHEMA),
            STATE_SCHEMA,
            "update",
            "NoTimeout",
        )
    )


JOB = JobDef(
    name="user_counts",
    inputs=("clickstream",),
    schema=SCHEMA,
    keys=("user_id",),
    time_column="last_event_time",
    build=build,
    shuffle_keys=grouped_by({"clickstream": "user_id"}),
    watermarks=watermarked({"clickstream": "event_time"}),
    state_key=("user_id",),
    sink="upsert",
    additive={"total_events": "sum", "purchases": "sum", "last_event_time": "max"},
    state_schema=STATE_SCHEMA,
)
