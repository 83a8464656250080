"""What ``table maintain`` will do, decided without Spark: the VACUUM retention and the table
settings to change.

A snapshot's restore (and a rollback) time-travels each table back to the version just before
the first commit of a batch after the snapshot's (``checkpoints.delta_txn``). Every data file live
at that version must still be on disk, and every one of them was removed (by a compaction, a
MERGE, a restore) no earlier than that batch began: the snapshot's ``batch_time_ms``. VACUUM
deletes only files removed longer ago than its retention, so a retention at least as long as the
oldest snapshot's age (measured from that instant) keeps every snapshot restorable.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from spark_jobs.contract import table_settings as tables
from spark_jobs.contract.table_settings import (
    DELTA_DEFAULT_RETENTION,
    DELTA_LOG_RETENTION,
    interval_seconds,
)

# Clocks of the writer (tombstone times) and of this host may differ by this much.
CLOCK_SLACK = 60.0
# Delta refuses to time-travel (so to RESTORE) further back than the table's
# delta.deletedFileRetentionDuration, and the oldest snapshot keeps ageing after a maintenance:
# its floor covers it until the next (daily by default) maintenance raises it again.
RESTORE_GRACE = 86400.0


def snapshot_time(manifest: Mapping[str, Any]) -> float:
    """The instant a snapshot's restore reaches back to: its batch's start (or its creation)."""
    created = float(manifest.get("created_ts") or time.time())
    batch_ms = manifest.get("batch_time_ms")
    return min(created, float(batch_ms) / 1000.0) if batch_ms else created


@dataclass(frozen=True)
class Retention:
    """The VACUUM retention and each floor it is the largest of (seconds)."""

    seconds: float
    floors: dict[str, float] = field(default_factory=dict)
    oldest_snapshot: str | None = None

    @property
    def because(self) -> str:
        return max(self.floors, key=lambda k: self.floors[k]) if self.floors else ""

    @property
    def hours(self) -> float:
        return self.seconds / 3600.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "seconds": round(self.seconds, 3),
            "because": self.because,
            "floors": {k: round(v, 3) for k, v in self.floors.items()},
            "oldest_snapshot": self.oldest_snapshot,
        }


def retention(
    spec_retention: float,
    snapshots: Iterable[Mapping[str, Any]],
    table_retention: float | None,
    recovery_window: float | None = None,
    now: float | None = None,
) -> Retention:
    """The longest of: the spec's ``tables.retention``; Delta's minimum (the table's
    ``delta.deletedFileRetentionDuration``, Delta's default when unset); the snapshots policy's
    ``recovery_window``; and the age of the oldest snapshot kept (plus clock slack and
    :data:`RESTORE_GRACE`). It becomes the table's ``delta.deletedFileRetentionDuration``, so
    Delta's own time-travel guard lets the restore through, and a hand-written VACUUM keeps it."""
    now = time.time() if now is None else now
    floors = {
        "tables.retention": float(spec_retention),
        "delta": DELTA_DEFAULT_RETENTION if table_retention is None else float(table_retention),
    }
    if recovery_window:
        floors["snapshots.recovery_window"] = float(recovery_window)
    oldest = min(snapshots, key=snapshot_time, default=None)
    if oldest is not None:
        age = max(0.0, now - snapshot_time(oldest))
        floors["oldest_snapshot"] = age + CLOCK_SLACK + RESTORE_GRACE
    return Retention(
        rounded(max(floors.values())), floors, str(oldest.get("id")) if oldest is not None else None
    )


def rounded(seconds: float) -> float:
    """Whole days past a day (the table property then changes rarely), whole seconds below."""
    if seconds > 86400.0:
        return float(-(-seconds // 86400.0) * 86400.0)
    return float(-(-seconds // 1.0))


def settings_changes(
    current: Mapping[str, str], retention_seconds: float
) -> tuple[dict[str, str], list[str]]:
    """(properties to set, properties to unset) so the table has ``tables.table_properties``
    with this retention (the data files' and the log's)."""
    wanted = tables.table_properties(retention_seconds)
    to_set = {}
    for key, value in wanted.items():
        have = current.get(key)
        same = have == value or (
            interval_seconds(have) is not None and interval_seconds(have) == interval_seconds(value)
        )
        if not same:
            to_set[key] = value
    to_unset = [k for k in tables.FORBIDDEN_PROPERTIES if k in current]
    return to_set, to_unset


def log_retention_warning(props: Mapping[str, str], need: Retention) -> str | None:
    """A warning when the table's JSON commits go before its oldest snapshot could be restored."""
    log_s = interval_seconds(props.get(tables.LOG_RETENTION_PROPERTY)) or DELTA_LOG_RETENTION
    snap = need.floors.get("oldest_snapshot")
    if snap is not None and snap > log_s:
        return (
            f"snapshot {need.oldest_snapshot} is older than the table's log retention "
            f"({log_s / 86400:g} days): its restore may find the commits it needs cleaned up; "
            "run table maintain without --dry-run (it keeps the log as long as the retention) "
            "or prune old snapshots"
        )
    return None
