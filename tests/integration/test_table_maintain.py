"""``table maintain`` on real Spark and real Delta: a dry run changes nothing; after compaction
and a VACUUM that deletes files, the oldest kept snapshot still restores, tables included, to
exactly what they held at that snapshot, and the maintenance has its row in the event log; and
maintenance beside a continuously running upsert job loses, doubles and fails nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from spark_jobs.checkpoints.restore import restore
from spark_jobs.checkpoints.roots import Target
from spark_jobs.checkpoints.snapshots import take_snapshot
from spark_jobs.cli import main as cli_main
from spark_jobs.contract import events, maintenance
from spark_jobs.contract.blocks import Snapshots, Tables
from spark_jobs.contract.lock import JobLock
from spark_jobs.contract.spec import load_spec
from spark_jobs.contract.table_settings import RETENTION_PROPERTY, interval_seconds
from spark_jobs.jobs.runner import run_job
from spark_jobs.tables import plan
from spark_jobs.tables.compact import compact
from spark_jobs.tables.maintain import Job, maintain
from spark_jobs.tables.report import event_details
from spark_jobs.tables.vacuum import data_files

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
GRACE = 10.0  # seconds
TIME_TRAVEL_GUARD = (
    "spark.databricks.delta.vacuum.enforceTimeTravelWithinDeletedFileRetentionDuration"
)
TYPES = ["page_view", "checkout", "purchase"]


@pytest.fixture(autouse=True)
def _roots(monkeypatch, tmp_path):
    for kind in ("CHECKPOINT", "SNAPSHOT", "TABLE", "LANDING"):
        monkeypatch.setenv(f"STATEKEEPER_{kind}_ROOTS", str(tmp_path))
    monkeypatch.setenv("STATEKEEPER_DATA", str(tmp_path / "data"))  # the event log: the test's


def click(event_id: str, user: int, minute: int, kind: int) -> str:
    return json.dumps(
        {
            "event_id": event_id,
            "user_id": f"u{user}",
            "event_type": TYPES[kind % 3],
            "page": "/p",
            "duration_sec": 1,
            "event_time": f"2026-03-15T{10 + minute // 60:02d}:{minute % 60:02d}:00Z",
        }
    )


def write_part(land: Path, part: int) -> None:
    """An hour of clickstream (the previous hour's windows close) and one bad line."""
    land.mkdir(parents=True, exist_ok=True)
    lines = [click(f"e{part}-{i}", i % 3, part * 60 + i * 4, i) for i in range(15)]
    lines.append(f"not json {part}")
    (land / f"part{part:02d}.json").write_text("\n".join(lines) + "\n")


def table_rows(spark, uri: str) -> list[tuple]:
    return sorted(tuple(str(v) for v in r) for r in spark.read.format("delta").load(uri).collect())


def live(table: str) -> set[str]:
    """The table's live data files (local paths), read with deltalake."""
    from deltalake import DeltaTable

    return {str(Path(u.removeprefix("file://"))) for u in DeltaTable(table).file_uris()}


def on_disk(table: str) -> set[str]:
    return set(data_files(table))


def log_files(table: str) -> list[str]:
    return sorted(p.name for p in (Path(table) / "_delta_log").iterdir())


@pytest.mark.timeout(1800)  # five runs, a dry run, a maintenance, a restore: minutes when busy
def test_oldest_snapshot_restores_after_maintain(spark, tmp_path, monkeypatch, capsys):
    """A dry run changes nothing; then a compaction leaves files only the past needs, the
    snapshot's batch runs, more batches, and ``maintain``: its VACUUM deletes the compaction's
    leftovers (older than any snapshot) and keeps every file the snapshot's tables need, though
    its own compaction has just replaced them; the restore gives both tables as they were then.

    The tables' retention is 1 s, so only the snapshot's floor keeps those files: its age, no
    clock slack (one clock), and a grace of seconds, not a day. In production the grace also
    keeps Delta's time-travel guard (no restore further back than the table's retention) quiet
    until the next maintenance; here that retention is asserted as the table property and the
    guard turned off for the restore, so the leftovers need be only seconds older than the
    snapshot's batch."""
    monkeypatch.setattr(plan, "CLOCK_SLACK", 0.0)
    # covers the seconds from the plan's "now" to its VACUUM (files removed in between too)
    monkeypatch.setattr(plan, "RESTORE_GRACE", GRACE)
    spec = load_spec("windowed_counts").with_overrides(
        input=str(tmp_path / "land"),
        output=str(tmp_path / "out"),
        checkpoint=str(tmp_path / "ckpt"),
        trigger="available-now",
    )
    spec = replace(
        spec,
        state_store="hdfs",  # a restored checkpoint in this JVM reads its state from files
        shuffle_partitions=2,
        max_files_per_trigger=1,
        snapshots=Snapshots(),
        tables=Tables(retention=1.0),
    )
    target = Target(spec.checkpoint, str(tmp_path / "snaps"), spec.name, spec)
    job = Job(spec, spec.checkpoint, target.snapshot_root, spec.output)
    both = (spec.output, spec.quarantine)
    land = tmp_path / "land"
    for part in range(3):  # a batch per file: batches 1 and 2 close an hour (an output file each)
        write_part(land, part)
    run_job(spec, spark=spark)  # and a quarantine file per batch

    # a compaction (maintain's own step) whose replaced files stay, as no VACUUM follows it here
    for t in both:
        assert compact(spark, t).files_removed > 1, t
    compacted_at = time.time()  # no later than its tombstones
    leftovers = {t: on_disk(t) - live(t) for t in both}
    assert all(leftovers.values()), leftovers

    write_part(land, 3)
    run_job(spec, spark=spark)  # a new small file beside each compacted one
    logs = {t: log_files(t) for t in both}
    dry = maintain(job, dry_run=True, spark=spark)
    for t in dry["tables"]:
        assert t["compaction"]["would_rewrite_files"] == 2, t
        assert t["before"] == t["after"], t
        # the job's session created the tables with every declared setting
        assert t["settings"]["set"] == {} and t["settings"]["unset"] == [], t
        assert t["retention"]["floors"]["delta"] == 1.0  # the spec's, as the table's own
    assert {t: log_files(t) for t in both} == logs  # no commit
    assert maintenance.read(spec.checkpoint) is None
    assert events.read(job=spec.name, kind="maintenance") == []  # a dry run is not logged

    # the leftovers older than the snapshot's batch by the grace (and a second: rounded up)
    time.sleep(max(0.0, compacted_at + GRACE + 2.0 - time.time()))
    write_part(land, 4)
    run_job(spec, spark=spark)
    with JobLock(spec.checkpoint, job=spec.name, purpose="run"):  # as beside a continuous run
        snap = take_snapshot(target)
    assert snap["valid"], snap["findings"]
    at_snapshot = {t: table_rows(spark, t) for t in both}
    needed = {t: live(t) for t in both}

    write_part(land, 5)
    run_job(spec, spark=spark)
    report = maintain(job, spark=spark)
    for t in report["tables"]:
        table = t["table"]
        assert t["retention"]["because"] == "oldest_snapshot", t["retention"]
        # Delta's time-travel guard (and a hand-written VACUUM) gets the same retention
        props = spark.sql(f"DESCRIBE DETAIL delta.`{table}`").first()["properties"]
        assert interval_seconds(props[RETENTION_PROPERTY]) == t["retention"]["seconds"]
        assert t["retention"]["oldest_snapshot"] == snap["id"]
        assert t["compaction"]["files_removed"] > 1, t
        assert needed[table].isdisjoint(live(table))  # all replaced by this compaction...
        assert needed[table] <= on_disk(table)  # ...and kept by the VACUUM
        assert t["vacuum"]["files_deleted"] == len(leftovers[table]) > 0, t
        assert leftovers[table].isdisjoint(on_disk(table))  # deleted from disk
    last = maintenance.read(spec.checkpoint)
    assert last is not None and last.report["tables"] == json.loads(json.dumps(report["tables"]))
    (row,) = events.read(job=spec.name, kind="maintenance")
    assert row["checkpoint"] == spec.checkpoint and row["reason"] == "pass"
    assert events.details(row) == json.loads(json.dumps(event_details(report)))
    for t in report["tables"]:
        logged = events.details(row)[t["role"]]
        assert logged["before"]["files"] == t["before"]["files"] > logged["after"]["files"]
        assert logged["vacuumed"]["files"] == len(leftovers[t["table"]])
    capsys.readouterr()
    assert cli_main(["events", spec.name, "--kind", "maintenance"]) == 0
    (shown,) = capsys.readouterr().out.splitlines()
    assert " maintenance " in shown and "reason=pass" in shown and '"vacuumed"' in shown

    spark.conf.set(TIME_TRAVEL_GUARD, "false")  # a day's grace's job, not this test's (above)
    try:
        done = restore(target, snap["id"], spark=spark)
    finally:
        spark.conf.unset(TIME_TRAVEL_GUARD)
    assert done["validation"]["exit_code"] == 0, done["validation"]
    assert all(q["table_version"] is not None for q in done["queries"])
    for t, expected in at_snapshot.items():
        assert table_rows(spark, t) == expected, t


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "spark_jobs", *args]


def _totals(table: Path) -> dict[str, tuple[int, int]]:
    """user -> (total_events, purchases), read with deltalake (no second JVM)."""
    from deltalake import DeltaTable

    if not (table / "_delta_log").is_dir():
        return {}
    cols = DeltaTable(str(table)).to_pyarrow_table(columns=["user_id", "total_events", "purchases"])
    rows = cols.to_pylist()
    return {r["user_id"]: (r["total_events"], r["purchases"]) for r in rows}


PACE = 4  # seconds between landed files
MAINTENANCES = 1  # each races many MERGE commits: it runs for several batches


@pytest.mark.timeout(2700)  # a continuous run, files landing, a maintenance in its own JVM
def test_maintain_beside_a_continuous_upsert_run(tmp_path):
    """user_counts (a MERGE per batch) runs on a 1 s trigger while files land every few seconds; table
    maintain runs meanwhile (compaction commits racing the MERGEs). The run never fails,
    and the table ends with exactly the totals of every event landed, the quarantine with every
    bad line once."""
    land, out, ck = tmp_path / "land", tmp_path / "out", tmp_path / "ckpt"
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'plugins'}"}
    expected: dict[str, list[int]] = {}

    def land_file(i: int) -> None:
        lines = []
        for j in range(20):
            # 200 users, 20 per file: a MERGE rewrites some files and leaves others to compact
            user, kind = (i * 20 + j) % 200, j % 3
            lines.append(click(f"e{i}-{j}", user, i * 3 + j // 10, kind))
            e = expected.setdefault(f"u{user}", [0, 0])
            e[0] += 1
            e[1] += kind == 2
        lines.append(f"not json {i}")
        land.mkdir(parents=True, exist_ok=True)
        tmp = land / f".part{i:03d}.tmp"
        tmp.write_text("\n".join(lines) + "\n")
        tmp.rename(land / f"part{i:03d}.json")  # lands whole

    run_args = ["run", "user_counts", "--input", str(land), "--output", str(out)]
    run_args += ["--checkpoint", str(ck), "--trigger", "processing-time:1s", "--run-for", "40m"]
    maintain_args = ["table", "maintain", "user_counts", "--checkpoint", str(ck)]
    maintain_args += ["--output", str(out), "--snapshot-root", str(tmp_path / "snaps"), "--json"]
    land_file(0)
    run = subprocess.Popen(
        _cli(*run_args), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    reports = []
    try:
        i = 1
        deadline = time.time() + 1800
        # two batches committed: the quarantine has a file per batch to compact
        while len(list((out / "_quarantine" / "_delta_log").glob("*.json"))) < 2:
            assert run.poll() is None, run.communicate()[1][-3000:]
            assert time.time() < deadline, "the run wrote nothing"
            land_file(i)
            i += 1
            time.sleep(PACE)
        for _ in range(MAINTENANCES):  # while files keep landing
            m = subprocess.Popen(
                _cli(*maintain_args),
                cwd=tmp_path,  # a user's folder: it gets no spark-warehouse/ (asserted below)
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            while m.poll() is None:
                assert run.poll() is None, run.communicate()[1][-3000:]
                land_file(i)
                i += 1
                time.sleep(PACE)
            stdout, stderr = m.communicate()
            assert m.returncode == 0, stderr[-3000:]
            reports.append(json.loads(stdout))  # one JSON object, nothing else
        want = {u: tuple(v) for u, v in expected.items()}
        while _totals(out) != want:  # every landed file read; a doubled batch never gets here
            assert run.poll() is None, run.communicate()[1][-3000:]
            assert time.time() < deadline, f"{_totals(out)} != {want}"
            time.sleep(2)
    finally:
        if run.poll() is None:
            run.send_signal(signal.SIGTERM)  # a graceful stop: between batches, exit 0
        _, run_err = run.communicate(timeout=300)
    assert run.returncode == 0, run_err[-3000:]  # no batch failed
    assert _totals(out) == want
    from deltalake import DeltaTable

    bad = DeltaTable(str(out / "_quarantine")).to_pyarrow_table(columns=["raw_line"])
    assert sorted(bad.column("raw_line").to_pylist()) == sorted(f"not json {n}" for n in range(i))
    compacted = [t["compaction"]["files_removed"] for r in reports for t in r["tables"]]
    assert max(compacted) > 1, reports  # the compaction did rewrite the stream's files
    assert not (tmp_path / "spark-warehouse").exists()  # Spark's catalog folder goes with the data
