"""``service_health``: liveness per service with transformWithStateInPandas (timers and initial
state). Timers follow the watermark in available-now runs (deterministic, and the run ends) and
the clock in processing-time runs. Logic: :mod:`spark_jobs.state.service_health`.

Event-time runs are ordered (:mod:`spark_jobs.state.ordered`): logs are held in a list state
until the watermark passes them, then applied in time order, so a silence is judged on every
log the watermark admitted, whatever batch it came in; alerts follow about the watermark delay
after the fact. Processing-time runs judge silence by the clock as logs arrive.

transformWithState needs the RocksDB state store, and Spark pins the time mode in the checkpoint.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from spark_jobs.contract import delta, paths
from spark_jobs.contract.durations import spark_interval
from spark_jobs.contract.errors import UserError
from spark_jobs.io import key_metrics
from spark_jobs.jobs.declaration import Duration, JobDef, JobParams, grouped_by

SCHEMA = "service string, status string, alert_time timestamp, last_seen timestamp"
# transformWithState's state variables: the service's health, and the logs held until the
# watermark passes them (ordered mode)
STATE = {"health": "last_seen long, status string", "held": "t long"}
TS_COLUMNS = ("alert_time", "last_seen")


class Params(JobParams):
    stale_after: Duration  # a service silent this long is stale
    # a Delta table (service, status, last_seen) of the services known before the first run
    initial_state: str | None = None


def time_mode(spec: Any) -> str:
    return "EventTime" if spec.trigger.available_now else "ProcessingTime"


def make_processor(stale_ms: int, mode: str, cols: list[str]):
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    from spark_jobs.jobs.pandas_io import concat, emit, to_ms
    from spark_jobs.state import ordered
    from spark_jobs.state import service_health as logic

    processing = mode == "ProcessingTime"

    class ServiceHealthProcessor(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self.handle = handle
            self.health = handle.getValueState("health", STATE["health"])
            self.held = handle.getListState("held", STATE["held"])

        def _get(self) -> Any:
            if not self.health.exists():
                return None
            last_seen, status = self.health.get()
            return logic.Health(int(last_seen), str(status))

        def _retime(self, *timers: int | None) -> None:
            for t in list(self.handle.listTimers()):
                self.handle.deleteTimer(t)
            for t in {t for t in timers if t is not None}:
                self.handle.registerTimer(t)

        def _advance(self, service: str, new: list[int], watermark: int) -> list[dict]:
            """Ordered event time: hold ``new``, apply what the watermark passed, retime."""
            held = [int(r[0]) for r in self.held.get()] if self.held.exists() else []
            due, kept = ordered.release_rows(
                [(t, "") for t in held], [(t, "") for t in new], watermark
            )
            alerts, health, deadline = logic.advance(
                service, self._get(), [t for t, _ in due], watermark, stale_ms
            )
            if health is not None:
                self.health.update((health.last_seen, health.status))
            if kept:
                self.held.put([(t,) for t, _ in kept])
            elif self.held.exists():
                self.held.clear()
            self._retime(deadline, min((t for t, _ in kept), default=None))
            return alerts

        def handleExpiredTimer(
            self, key: Any, timerValues: Any, expiredTimerInfo: Any
        ) -> Iterator[Any]:
            if not processing:
                alerts = self._advance(key[0], [], timerValues.getCurrentWatermarkInMs())
            else:
                when = timerValues.getCurrentProcessingTimeInMs()
                alerts, new = logic.on_timer(key[0], self._get(), when)
                if new is not None:
                    self.health.update((new.last_seen, new.status))
            yield from self._out(alerts, held_before=True, updated=bool(alerts))

        def _out(self, alerts: list[dict], held_before: bool, updated: bool) -> Iterator[Any]:
            """Alert frames, then the call's metric row: a service, once seen, stays in state
            (its status is what the next log is judged against), so keys only ever join."""
            for df in emit(alerts, cols, TS_COLUMNS):
                yield key_metrics.with_null_metrics(df)
            yield key_metrics.frame(cols, int(not held_before), int(updated), 0, 0)

        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
            df = concat(rows)
            if df is None:
                return
            times = to_ms(df["event_time"]).tolist()
            had = self.health.exists() or self.held.exists()
            if not processing:
                alerts = self._advance(key[0], times, timerValues.getCurrentWatermarkInMs())
            else:
                now = timerValues.getCurrentProcessingTimeInMs()
                alerts, new, timer = logic.on_logs(key[0], times, self._get(), stale_ms, now)
                self.health.update((new.last_seen, new.status))
                self._retime(timer)
            yield from self._out(alerts, held_before=had, updated=True)

        def handleInitialState(self, key: Any, initialState: Any, timerValues: Any) -> None:
            row = initialState.iloc[-1]
            prev = logic.Health(int(to_ms(initialState["last_seen"])[-1]), str(row["status"]))
            self.health.update((prev.last_seen, prev.status))
            now = timerValues.getCurrentProcessingTimeInMs() if processing else None
            self._retime(logic.initial_timer(prev, stale_ms, now))

        def close(self) -> None:
            pass

    return ServiceHealthProcessor()


def initial_state(spark: Any, table: str | None) -> Any | None:
    """Known services and their last status, from the Delta table ``params.initial_state``."""
    if not table:
        return None
    uri = paths.resolve(table)
    if not delta.exists(uri):
        return None  # no known services yet: start from nothing
    df = spark.read.format("delta").load(uri)
    missing = {"service", "status", "last_seen"} - set(df.columns)
    if missing:
        raise UserError(f"initial state table {uri} lacks column(s) {', '.join(sorted(missing))}")
    return df.selectExpr("service", "status", "CAST(last_seen AS timestamp) AS last_seen").groupBy(
        "service"
    )


def build(spark: Any, spec: Any, events: dict[str, Any]) -> Any:
    if spec.state_store != "rocksdb":
        raise UserError(
            f"job {spec.name} uses transformWithState, which needs state_store: rocksdb (spec says {spec.state_store})"
        )
    p = Params.of(spec)
    stale_ms = int(p.stale_after * 1000)
    mode = time_mode(spec)
    stream = events["service-logs"].select("service", "event_time")
    if mode == "EventTime":
        stream = stream.withWatermark("event_time", spark_interval(spec.watermark_seconds))
    return stream.groupBy("service").transformWithStateInPandas(
        statefulProcessor=make_processor(stale_ms, mode, JOB.columns),
        outputStructType=key_metrics.output_schema(SCHEMA),
        outputMode="Append",
        timeMode=mode,
        initialState=initial_state(spark, p.initial_state),
    )


JOB = JobDef(
    name="service_health",
    inputs=("service-logs",),
    schema=SCHEMA,
    keys=("service", "alert_time", "status"),
    time_column="last_seen",
    build=build,
    shuffle_keys=grouped_by({"service-logs": "service"}),
    settles_after=lambda spec: Params.of(spec).stale_after,
    params=Params,
    state_schema=STATE,
    state_format="ordered-v1",  # state written before ordered mode is refused, not misread
    time_mode=time_mode,  # Spark pins it in the checkpoint
)
