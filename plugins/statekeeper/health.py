"""Health of a continuous streaming job, read from its progress log (no Spark, no Airflow).

``assess`` turns the last progress records of ``<checkpoint>/_statekeeper/progress.jsonl`` into a
verdict: ``dead`` (no driver holds the checkpoint), ``stalled`` (no progress for too long) or
``healthy`` (``idle`` when the last record says the query is caught up and waiting for data,
which Spark reports instead of empty batches), plus warnings that an engineer should look at but
that a restart would not cure (slow batches, a backlog, state that only grows, late rows dropped,
a Kafka lag that keeps growing). The verdict carries the Kafka lag per topic of the last batch.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from spark_jobs.contract.blocks import Supervise
from spark_jobs.contract.lag import total_behind
from spark_jobs.contract.lock import is_maintenance
from spark_jobs.contract.progress_log import (
    BatchProgress,
    Heartbeat,
    IdleEvent,
    ProgressRecord,
)

RESTART_VERDICTS = ("dead", "stalled")
# A restore, rollback, repartition, ... holds the checkpoint: waited for, never restarted.
MAINTENANCE = "maintenance"
ALIVE_VERDICTS = ("healthy", "idle")  # a started driver: processing, or caught up and waiting


_SUPERVISE = Supervise()  # the spec's defaults, for thresholds built without a spec


@dataclass(frozen=True)
class Thresholds:
    """What ``assess`` judges by: the spec's ``supervise:`` block plus the trigger interval."""

    max_progress_age: float = _SUPERVISE.max_progress_age
    trigger_interval: float = 30.0  # the job's processing-time trigger, seconds
    max_batch_to_trigger_ratio: float = _SUPERVISE.max_batch_to_trigger_ratio
    window: int = 5  # how many recent batches the rate and state checks look at
    startup_grace: float = _SUPERVISE.startup_grace
    max_batch_duration: float = _SUPERVISE.max_batch_duration

    @classmethod
    def from_spec(cls, supervise: Supervise, trigger_interval: float) -> Thresholds:
        """From a spec's ``supervise:`` block and its trigger interval (0: available-now)."""
        return cls(
            max_progress_age=supervise.max_progress_age,
            trigger_interval=trigger_interval or cls.trigger_interval,
            max_batch_to_trigger_ratio=supervise.max_batch_to_trigger_ratio,
            startup_grace=supervise.startup_grace,
            max_batch_duration=supervise.max_batch_duration,
        )


@dataclass
class Health:
    verdict: str  # healthy | idle | stalled | dead | starting | maintenance
    reason: str
    warnings: list[str] = field(default_factory=list)
    progress_age: float | None = None
    batch_id: int | None = None
    state_rows: int | None = None  # Spark's state rows (buckets, for the batched executor)
    state_keys: int | None = None  # user keys held, when the job counts them (docs/contracts.md §4)
    lag: dict[str, int] = field(default_factory=dict)  # Kafka topic -> records not processed yet

    @property
    def needs_restart(self) -> bool:
        return self.verdict in RESTART_VERDICTS

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def typed(records: Sequence[ProgressRecord | dict[str, Any]]) -> list[ProgressRecord]:
    """Records as the contract's classes (lines as logged are parsed; unknown ones dropped)."""
    out: list[ProgressRecord] = []
    for r in records:
        rec = r if isinstance(r, ProgressRecord) else ProgressRecord.from_json(r)
        if rec is not None:
            out.append(rec)
    return out


def assess(
    records: Sequence[ProgressRecord | dict[str, Any]],
    driver_alive: bool,
    th: Thresholds,
    now: float | None = None,
    started_at: float | None = None,
    holder: dict[str, Any] | None = None,
) -> Health:
    """The verdict for one job. ``records`` are its progress records, oldest first; ``holder``
    the lock file's fields when the checkpoint is locked (its purpose says run or maintenance)."""
    now = time.time() if now is None else now
    if holder is not None and is_maintenance(holder):
        return Health(
            MAINTENANCE,
            f"{holder.get('purpose')} in progress (pid {holder.get('pid')} since "
            f"{holder.get('since')}); the supervisor waits for it to release the checkpoint",
        )
    if not driver_alive:
        return Health("dead", "no driver holds the checkpoint lock")
    # Only progress written by this driver counts: an old log says nothing about a new process.
    recent = [
        r
        for r in typed(records)
        if started_at is None or (r.logged_at or r.time or 0) >= started_at
    ]
    if not recent:
        since = now - started_at if started_at else None
        if since is not None and since > th.startup_grace:
            return Health(
                "stalled", f"no progress {since:.0f}s after start (grace {th.startup_grace:.0f}s)"
            )
        return Health("starting", "driver holds the lock; no progress yet")
    h, batches = _from_newest(recent, now, th)
    if batches:
        h.warnings += _trend_warnings(batches[-th.window :], th, bool(h.lag))
    return h


def _from_newest(
    recent: list[ProgressRecord], now: float, th: Thresholds
) -> tuple[Health, list[BatchProgress]]:
    """The verdict from the newest record (any record proves the driver alive; a heartbeat says a
    batch is running) and the batch records after the driver started."""
    newest = recent[-1]
    age = now - (newest.logged_at or newest.time or now)
    idle = isinstance(newest, IdleEvent)
    beat = newest if isinstance(newest, Heartbeat) else None
    batches = [r for r in recent if isinstance(r, BatchProgress)]
    last = batches[-1] if batches else None
    if idle:
        reason = "caught up, waiting for new data"
    else:
        reason = f"batch running for {beat.batch_running_seconds}s" if beat else "progressing"
    h = Health(
        "idle" if idle else "healthy",
        reason,
        progress_age=round(age, 1),
        batch_id=last.batch_id if last else None,
        state_rows=(last.state_rows or 0) if last else 0,
        state_keys=last.keys.total if last and last.keys else None,
        lag=total_behind(last.raw) if last else {},
    )
    if age > th.max_progress_age:
        h.verdict, h.reason = (
            "stalled",
            f"last progress {age:.0f}s ago (limit {th.max_progress_age:.0f}s)",
        )
    elif beat and beat.batch_running_seconds > th.max_batch_duration:
        h.verdict, h.reason = (
            "stalled",
            f"one batch has run {beat.batch_running_seconds}s "
            f"(limit max_batch_duration {th.max_batch_duration:.0f}s)",
        )
    return h, batches


def _trend_warnings(window: list[BatchProgress], th: Thresholds, kafka: bool) -> list[str]:
    """What the last batches (``window``, oldest first) show going wrong: a slow batch, a
    backlog, state that only grows, a Kafka lag that only grows, rows dropped as late."""
    out: list[str] = []
    last = window[-1]
    dur = last.duration_ms.get("triggerExecution")
    if (
        dur
        and th.trigger_interval
        and dur / 1000.0 > th.trigger_interval * th.max_batch_to_trigger_ratio
    ):
        out.append(
            f"slow: batch {last.batch_id} took {dur / 1000:.1f}s for a {th.trigger_interval:g}s trigger"
        )
    busy = [r for r in window if r.num_input_rows > 0]
    if len(busy) >= 3 and all(
        (r.input_rows_per_second or 0) > (r.processed_rows_per_second or 0) for r in busy
    ):
        out.append("backlog: input rate above processing rate in the last batches")
    totals = [r.state_rows or 0 for r in window]
    if (
        len(window) >= 3
        and all(b > a for a, b in zip(totals, totals[1:], strict=False))
        and not any(r.state_rows_removed for r in window)
    ):
        out.append(f"state growing with no rows removed ({totals[0]} -> {totals[-1]} rows)")
    behind = [sum(total_behind(r.raw).values()) for r in window]
    if len(window) >= 3 and kafka and all(b > a for a, b in zip(behind, behind[1:], strict=False)):
        out.append(
            f"falling behind: Kafka lag grew in each of the last batches ({behind[0]} -> "
            f"{behind[-1]} records)"
        )
    dropped = sum(r.dropped_by_watermark or 0 for r in window)
    if dropped:
        out.append(f"late rows dropped by the watermark: {dropped} in the last batches")
    return out
