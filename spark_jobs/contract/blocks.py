"""The typed sub-blocks of a job spec: ``supervise:``, ``snapshots:``, ``quality:``,
``freshness:`` and ``tables:``.

Every default of these blocks is written here and nowhere else; readers take attributes. A
duration is given as people write it (``10 minutes``) and held as float seconds. A bad value or
an unknown key is one line naming the spec file and the field
(:func:`spark_jobs.contract.spec.parse_spec`, which holds them as fields of the spec file's model).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from spark_jobs.contract.durations import parse_seconds
from spark_jobs.contract.errors import UserError

_DURATION = "a positive duration such as 30s or 10 minutes"


def _seconds(value: object) -> float:
    # parse_seconds raises UserError; pydantic only collects ValueError into its report.
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(_DURATION)
    try:
        return parse_seconds(value)
    except UserError as exc:
        raise ValueError(_DURATION) from exc


Seconds = Annotated[float, BeforeValidator(_seconds), Field(gt=0, description=_DURATION)]


class _Block(BaseModel):
    # strict: YAML gives real numbers and booleans; a quoted "5" or a bool for a count is a typo
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Supervise(_Block):
    """How the supervisor judges and restarts a continuous job's driver."""

    max_progress_age: Seconds = 300.0  # no progress record for this long: "stalled"
    startup_grace: Seconds = 180.0  # a new driver's time before its first progress is due
    # A batch that heartbeats is alive however long it runs, up to this (then it is hung).
    max_batch_duration: Seconds = 3600.0
    max_batch_to_trigger_ratio: float = Field(2.0, gt=0, description="a number > 0")
    restart_backoff: Seconds = 30.0  # first wait before a relaunch; doubles per restart
    max_restarts: int = Field(5, ge=0, description="an integer >= 0")  # within restart_window
    restart_window: Seconds = 3600.0  # restarts are counted across runs over this window


class Snapshots(_Block):
    """The checkpoint maintenance DAG's snapshot policy; no ``every``: the job is not in it."""

    every: Seconds | None = Field(None, description=_DURATION)
    keep: int = Field(7, ge=0, description="an integer >= 0")  # newest snapshots prune keeps
    # how far back a restore must reach (checked by checkpoint validate)
    recovery_window: Seconds | None = Field(None, description=_DURATION)


class Quality(_Block):
    """Thresholds of the quality suite's macros; unset: a suite using the macro is refused."""

    freshness_sla: Seconds | None = Field(None, description=_DURATION)
    max_quarantine_rate: float | None = Field(
        None, ge=0, le=1, description="a number between 0 and 1"
    )
    # Rows to validate up to which pandas runs (no JVM started); more go to Spark.
    pandas_max_rows: int = Field(1_000_000, ge=0, description="an integer >= 0")


class Freshness(_Block):
    """Event-time freshness limits; unset: that lag is shown but never alerted on."""

    # now minus the watermark: how far behind event time the job's output is
    max_watermark_lag: Seconds | None = Field(None, description=_DURATION)
    # age of the oldest input not yet read (a landing file, a Kafka record behind the end)
    max_input_lag: Seconds | None = Field(None, description=_DURATION)


class Tables(_Block):
    """How ``table maintain`` (and its ``table_maintenance_<job>`` DAG) cares for the job's
    output and quarantine tables (docs/tables.md)."""

    schedule: str = Field("@daily", min_length=1, description="an Airflow schedule such as @daily")
    # VACUUM keeps files removed less than this long ago; never shorter than the oldest snapshot
    # needs. Also the tables' delta.deletedFileRetentionDuration, so a hand-written VACUUM keeps it.
    retention: Seconds = 7 * 86400.0
