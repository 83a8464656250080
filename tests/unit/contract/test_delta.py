"""The one reader of Delta table state (``spark_jobs.contract.delta``) on real Delta logs written
by ``deltalake`` (delta-rs, no JVM): its answers agree with delta-rs' own, also after a Delta
checkpoint and log cleanup removed the JSON commits."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from deltalake.transaction import CommitProperties, Transaction

from spark_jobs.contract import delta

pytestmark = pytest.mark.unit


def _write(table: Path, rows: int, app: str, batch: int, note: str = "") -> None:
    props = CommitProperties(
        app_transactions=[Transaction(app, batch)],
        custom_metadata={"userMetadata": note} if note else None,
    )
    data = pa.table({"k": list(range(rows)), "v": [f"r{i}" for i in range(rows)]})
    write_deltalake(str(table), data, mode="append", commit_properties=props)


def test_versions_commits_and_metrics_agree_with_delta_rs(tmp_path):
    table = tmp_path / "t"
    assert not delta.exists(str(table)) and delta.version(str(table)) is None
    assert delta.commits(str(table)) == [] and delta.rows_written_after(str(table), None) == (
        0,
        None,
    )
    for batch, rows in enumerate((3, 5, 7)):
        _write(table, rows, "query-a", batch, note=f"run {batch}")
    _write(table, 2, "query-b", 9)
    dt = DeltaTable(str(table))
    assert delta.exists(str(table)) and delta.version(str(table)) == dt.version() == 3
    assert [c.version for c in delta.commits(str(table), after=1)] == [2, 3]
    assert [c.version for c in delta.commits(str(table), newest=2)] == [2, 3]
    c1 = delta.commit(str(table), 1)
    assert c1 is not None and c1.txns == {"query-a": 1} and c1.user_metadata == "run 1"
    assert c1.operation == dt.history()[-2]["operation"]
    assert delta.added_records(c1) == 5
    files = delta.added_files(str(table), c1)
    assert len(files) == 1 and Path(files[0]).is_file()
    assert [delta.added_records(c) for c in delta.commits(str(table))] == [3, 5, 7, 2]
    log = delta.txn_log(str(table))
    assert log.latest == {"query-a": 2, "query-b": 9}
    assert log.latest["query-a"] == dt.transaction_version("query-a")
    assert log.version_of_batch(("query-a",), 1) == 1
    assert log.first_version_after(("query-a", "other"), 0) == 1


def test_txns_survive_a_checkpoint_and_log_cleanup(tmp_path):
    table = tmp_path / "t"
    for batch in range(4):
        _write(table, 1, "query-a", batch)
    DeltaTable(str(table)).create_checkpoint()
    _write(table, 1, "query-b", 0)
    log_dir = table / delta.LOG_DIR
    assert list(log_dir.glob("*.checkpoint.parquet"))
    # what log retention does: the JSON commits the checkpoint covers go
    for v in range(4):
        (log_dir / f"{v:020d}.json").unlink()
    short = delta.txn_log(str(table), every_commit=False)
    full = delta.txn_log(str(table))
    dt = DeltaTable(str(table))
    for log in (short, full):
        assert log.latest == {"query-a": 3, "query-b": 0}
        assert log.latest["query-a"] == dt.transaction_version("query-a")
    assert [c.version for c in full.commits] == [4] and full.checkpoint_version == 3
    assert delta.commit(str(table), 2) is None  # gone: callers say the count is unknown


def test_reading_the_newest_commits_costs_no_more_than_those_files(tmp_path):
    """The health page reads the newest commits of several tables per request: with 2,000
    commits in the log, 40 are read in a few milliseconds (one listing, 40 small files)."""
    log_dir = tmp_path / "t" / delta.LOG_DIR
    log_dir.mkdir(parents=True)
    info = {
        "commitInfo": {"operation": "STREAMING UPDATE", "operationMetrics": {"numOutputRows": "4"}}
    }
    for v in range(2000):
        txn = {"txn": {"appId": "q", "version": v}}
        (log_dir / f"{v:020d}.json").write_text(json.dumps(txn) + "\n" + json.dumps(info) + "\n")
    started = time.perf_counter()
    newest = delta.commits(str(tmp_path / "t"), newest=40)
    took = time.perf_counter() - started
    assert [c.version for c in newest] == list(range(1960, 2000))
    assert sum(c.rows_written for c in newest) == 160
    assert took < 0.5, took
    # what a run reports: rows Spark's commits wrote after the version it started at (a MERGE
    # counts inserted and updated rows, not its numOutputRows: the rows of the files it rewrote,
    # copied ones included), and the version it ended at
    metrics = {"numTargetRowsInserted": "2", "numTargetRowsUpdated": "3"}
    metrics |= {"numTargetRowsCopied": "7", "numOutputRows": "12"}  # as Delta writes them
    merge = {"operation": "MERGE", "operationMetrics": metrics}
    (log_dir / f"{2000:020d}.json").write_text(json.dumps({"commitInfo": merge}) + "\n")
    assert delta.rows_written_after(str(tmp_path / "t"), 1997) == (4 + 4 + 5, 2000)
