"""``sessions``: clickstream sessions with flatMapGroupsWithState semantics
(applyInPandasWithState, event-time timeout, append). Logic: :mod:`spark_jobs.state.sessions`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from spark_jobs.contract.durations import spark_interval
from spark_jobs.io import key_metrics
from spark_jobs.io.tables import columns

SINK = "append"
STATE_SCHEMA = "sessions binary"
INPUT_COLUMNS = ["user_id", "event_time", "event_id", "event_type", "page", "duration_sec"]
TS_COLUMNS = ("session_start", "session_end")


def make_update(gap_ms: int, max_pages: int):
    """The per-key function for applyInPandasWithState (timeout branch first)."""

    def update_sessions(key: tuple, pdfs: Iterator[Any], state: Any) -> Iterator[Any]:
        from spark_jobs.jobs.pandas_io import concat, emit, to_ms, values
        from spark_jobs.state import codec
        from spark_jobs.state import sessions as logic

        user_id = key[0]
        prev = (
            [logic.Session.from_tuple(t) for t in codec.decode(state.get[0])]
            if state.exists
            else []
        )
        events: list = []
        if not state.hasTimedOut:
            df = concat(pdfs)
            if df is not None:
                t = to_ms(df["event_time"])
                events = list(
                    zip(
                        t.tolist(),
                        df["event_id"],
                        df["event_type"],
                        values(df["page"]),
                        values(df["duration_sec"]),
                        strict=True,
                    )
                )
        rows, still, timeout = logic.update(
            user_id, events, prev, state.getCurrentWatermarkMs(), gap_ms, max_pages
        )
        had = state.exists
        if still:
            state.update((codec.encode([s.to_tuple() for s in still]),))
            state.setTimeoutTimestamp(timeout)
        else:
            state.remove()
        for df in emit(rows, columns("sessions"), TS_COLUMNS):
            yield key_metrics.with_null_metrics(df)
        # a user leaves the state only when its last session closes: expired, never removed
        yield key_metrics.frame("sessions", int(bool(still)) - int(had),
                                int(bool(still) and bool(events or rows)), 0,
                                int(had and not still))  # fmt: skip

    return update_sessions


def build(spark: Any, spec: Any, events: dict[str, Any]) -> Any:
    gap_ms = int(spec.param_seconds("gap") * 1000)
    max_pages = int(spec.params.get("last_pages", 10))
    stream = events["clickstream"].withWatermark(
        "event_time", spark_interval(spec.watermark_seconds)
    )
    if spec.executor == "batched":
        from spark_jobs.jobs import keyed

        return keyed.batched_sessions(stream, spec, gap_ms, max_pages)
    return (
        stream.select(*INPUT_COLUMNS)
        .groupBy("user_id")
        .applyInPandasWithState(
            make_update(gap_ms, max_pages),
            key_metrics.output_schema("sessions"),
            STATE_SCHEMA,
            "append",
            "EventTimeTimeout",
        )
    )
