"""``fraud_alerts``: brute-force login alerts (applyInPandasWithState, event-time timeout,
append). Logic: :mod:`spark_jobs.state.fraud`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from spark_jobs.io.tables import OUTPUTS, columns
from spark_jobs.runtime.durations import spark_interval

SINK = "append"
STATE_SCHEMA = "failures binary"
INPUT_COLUMNS = ["user_id", "event_time", "event_id", "event_type", "ip"]
TS_COLUMNS = ("alert_time", "first_failure_time")


def make_update(gap_ms: int, threshold: int):
    def update_failures(key: tuple, pdfs: Iterator[Any], state: Any) -> Iterator[Any]:
        from spark_jobs.jobs.pandas_io import concat, emit, to_ms
        from spark_jobs.state import codec
        from spark_jobs.state import fraud as logic

        if state.hasTimedOut:
            state.remove()
            return
        prev = logic.Failures.from_tuple(codec.decode(state.get[0])) if state.exists else None
        df = concat(pdfs)
        events = []
        if df is not None:
            events = list(
                zip(
                    to_ms(df["event_time"]).tolist(),
                    df["event_id"],
                    df["event_type"],
                    df["ip"],
                    strict=True,
                )
            )
        rows, st, timeout = logic.update(key[0], events, prev, gap_ms, threshold)
        if st is None:
            state.remove()
        else:
            state.update((codec.encode(st.to_tuple()),))
            state.setTimeoutTimestamp(max(timeout, state.getCurrentWatermarkMs() + 1))
        yield from emit(rows, columns("fraud_alerts"), TS_COLUMNS)

    return update_failures


def build(spark: Any, spec: Any, events: dict[str, Any]) -> Any:
    gap_ms = int(spec.param_seconds("failure_gap") * 1000)
    threshold = int(spec.params.get("threshold", 5))
    stream = events["auth"].withWatermark("event_time", spark_interval(spec.watermark_seconds))
    if spec.executor == "batched":
        from spark_jobs.jobs import keyed

        return keyed.batched_fraud(stream, spec, gap_ms, threshold)
    return (
        stream.select(*INPUT_COLUMNS)
        .groupBy("user_id")
        .applyInPandasWithState(
            make_update(gap_ms, threshold),
            OUTPUTS["fraud_alerts"],
            STATE_SCHEMA,
            "append",
            "EventTimeTimeout",
        )
    )
