"""``table maintain``'s decisions without Spark: the VACUUM retention (never shorter than the
oldest kept snapshot needs), the table settings to change, and restore's view of maintenance
commits (a compaction or VACUUM after a snapshot does not block its restore; a foreign write
still does), on real Delta logs written by delta-rs."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from deltalake.transaction import CommitProperties, Transaction

from spark_jobs.checkpoints import delta_txn
from spark_jobs.contract import delta
from spark_jobs.contract import table_settings as tables
from spark_jobs.contract.errors import UserError
from spark_jobs.tables import plan

pytestmark = pytest.mark.unit

DAY = 86400.0
NOW = 1_800_000_000.0


def test_retention_is_the_longest_floor():
    r = plan.retention(DAY, [], None, now=NOW)
    assert r.seconds == plan.DELTA_DEFAULT_RETENTION and r.because == "delta"
    r = plan.retention(30 * DAY, [], DAY, now=NOW)
    assert r.seconds == 30 * DAY and r.because == "tables.retention"
    r = plan.retention(DAY, [], DAY, recovery_window=2 * DAY, now=NOW)
    assert r.because == "snapshots.recovery_window"


def test_retention_covers_the_oldest_snapshot_from_its_batch_start():
    snaps = [
        {"id": "new", "created_ts": NOW - 3600, "batch_time_ms": None},
        # taken 10 days ago of a batch that began 10 days and 1 hour ago
        {"id": "old", "created_ts": NOW - 10 * DAY, "batch_time_ms": (NOW - 10 * DAY - 3600) * 1e3},
    ]
    r = plan.retention(DAY, snaps, DAY, now=NOW)
    assert r.because == "oldest_snapshot" and r.oldest_snapshot == "old"
    assert r.floors["oldest_snapshot"] == 10 * DAY + 3600 + plan.CLOCK_SLACK + plan.RESTORE_GRACE
    assert r.seconds == 12 * DAY  # whole days past a day: the table property changes rarely
    assert r.to_dict()["floors"]["tables.retention"] == DAY


def test_intervals_and_settings_changes():
    assert tables.interval_seconds("interval 7 days") == 7 * DAY
    assert tables.interval_seconds("INTERVAL 3600 seconds") == 3600
    assert tables.interval_seconds(None) is None and tables.interval_seconds("soon") is None
    wanted = tables.table_properties(7 * DAY)
    assert plan.settings_changes(wanted, 7 * DAY) == ({}, [])
    # the same duration written another way is no change; a forbidden property is unset
    same = {**wanted, tables.RETENTION_PROPERTY: "interval 1 weeks"}
    forbidden = {**same, "delta.setTransactionRetentionDuration": "interval 1 days"}
    assert plan.settings_changes(forbidden, 7 * DAY) == (
        {},
        ["delta.setTransactionRetentionDuration"],
    )
    # the log is kept as long as the files: Delta's 30 days (a table of an earlier release) or a
    # shorter log is brought to the retention, both ways
    for had in ("interval 30 days", "interval 1 days"):
        older = {**wanted, tables.LOG_RETENTION_PROPERTY: had}
        assert plan.settings_changes(older, 7 * DAY) == (
            {tables.LOG_RETENTION_PROPERTY: "interval 604800 seconds"},
            [],
        )
    to_set, _ = plan.settings_changes({"delta.enableChangeDataFeed": "true"}, DAY)
    assert to_set[tables.RETENTION_PROPERTY] == "interval 86400 seconds"
    assert to_set[tables.LOG_RETENTION_PROPERTY] == "interval 86400 seconds"
    short, _ = plan.settings_changes({}, 60.0)  # a test's retention: the log keeps a day
    assert short[tables.RETENTION_PROPERTY] == "interval 60 seconds"
    assert short[tables.LOG_RETENTION_PROPERTY] == "interval 86400 seconds"
    assert "delta.enableChangeDataFeed" not in to_set and "delta.checkpointInterval" in to_set
    defaults = tables.session_defaults(DAY)
    assert defaults["spark.databricks.delta.properties.defaults.enableChangeDataFeed"] == "true"
    assert defaults["spark.databricks.delta.properties.defaults.logRetentionDuration"] == (
        "interval 86400 seconds"
    )
    # a session without a spec leaves both retentions to Delta (7 days of files, 30 of log)
    assert not any("Retention" in k for k in tables.session_defaults())


def _append(table, n: int, app: str | None, batch: int = 0) -> None:
    props = CommitProperties(app_transactions=[Transaction(app, batch)]) if app else None
    data = pa.table({"k": list(range(n))})
    write_deltalake(str(table), data, mode="append", commit_properties=props)


def test_maintenance_commits_do_not_block_a_restore_but_foreign_writes_do(tmp_path):
    table = tmp_path / "t"
    for batch in range(3):
        _append(table, 3, "q", batch)  # versions 0, 1, 2 wrote batches 0, 1, 2
    DeltaTable(str(table)).optimize.compact()  # version 3, dataChange=false
    DeltaTable(str(table)).vacuum(
        retention_hours=0, enforce_retention_duration=False, dry_run=False
    )
    _append(table, 3, "q", 3)
    ops = [c.operation for c in delta.commits(str(table))]
    assert "OPTIMIZE" in ops
    assert not any(c.changes_rows for c in delta.commits(str(table)) if c.operation == "OPTIMIZE")
    target, _ = delta_txn.version_before_batch(str(table), "q", 0)
    assert target == 0  # back to batch 0's version: the compaction is undone with the rest
    _append(table, 1, None)  # someone else's rows
    with pytest.raises(UserError, match="was not written by query q"):
        delta_txn.version_before_batch(str(table), "q", 0)


def test_text_report_names_each_step_and_its_time():
    from spark_jobs.tables.report import text

    stats = {
        "files": 40,
        "bytes": 40 << 10,
        "average_bytes": 1 << 10,
        "files_on_disk": 40,
        "bytes_on_disk": 40 << 10,
    }
    after = {**stats, "files": 1, "average_bytes": 40 << 10, "files_on_disk": 5}
    table = {
        "table": "/t",
        "role": "output",
        "warnings": ["old snapshot"],
        "before": stats,
        "after": after,
        "settings": {"set": {"delta.checkpointInterval": "10"}, "unset": [], "seconds": 0.4},
        "retention": plan.retention(DAY, [], None, now=NOW).to_dict(),
        "compaction": {
            "files_removed": 40,
            "files_added": 1,
            "bytes_removed": 40 << 10,
            "bytes_added": 30 << 10,
            "zorder_by": [],
            "attempts": 2,
            "seconds": 3.2,
        },
        "vacuum": {"files_deleted": 35, "bytes_deleted": 35 << 10, "seconds": 1.5},
    }
    quarantine = {"table": "/t/_quarantine", "role": "quarantine", "skipped": "no table yet"}
    out = text({"job": "j", "dry_run": False, "seconds": 5.1, "tables": [table, quarantine]})
    assert "bin-packed 40 files (40.0 KiB) into 1 (30.0 KiB) (3.2 s, 2 attempt(s))" in out
    assert "deleted 35 files (35.0 KiB) removed over 168.00 h ago (longest floor: delta)" in out
    assert "set delta.checkpointInterval=10 (0.4 s)" in out and "warning:    old snapshot" in out
    assert "40 live files, 40.0 KiB (avg 1.0 KiB)" in out and "skipped: no table yet" in out
