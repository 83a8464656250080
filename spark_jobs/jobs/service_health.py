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

from typing import Any

from spark_jobs.contract import delta, paths
from spark_jobs.contract.errors import UserError
from spark_jobs.io import key_metrics, watermarks
from spark_jobs.jobs.declaration import Duration, JobDef, JobParams, grouped_by
from spark_jobs.state import service_health as logic

SCHEMA = "service string, status string, alert_time timestamp, last_seen timestamp"
STATE = logic.STATE  # the state variables, declared with the logic that reads them


class Params(JobParams):
    stale_after: Duration  # a service silent this long is stale
    # a Delta table (service, status, last_seen) of the services known before the first run
    initial_state: str | None = None


def time_mode(spec: Any) -> str:
    return "EventTime" if spec.trigger.available_now else "ProcessingTime"


def make_processor(stale_ms: int, mode: str, cols: list[str]) -> Any:
    """The job's StatefulProcessor (imported here: its module imports pyspark)."""
    from spark_jobs.jobs.service_health_processor import ServiceHealthProcessor

    return ServiceHealthProcessor(stale_ms, mode == "ProcessingTime", cols)


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
        stream = watermarks.on(stream, "event_time", spec.watermark_seconds)
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
    # event time only: a processing-time job has no watermark
    watermarks=lambda spec: (
        {"service-logs": "event_time"} if time_mode(spec) == "EventTime" else {}
    ),
    state_key=("service",),
    settles_after=lambda spec: Params.of(spec).stale_after,
    params=Params,
    state_schema=STATE,
    state_format="ordered-v1",  # state written before ordered mode is refused, not misread
    time_mode=time_mode,  # Spark pins it in the checkpoint
)
