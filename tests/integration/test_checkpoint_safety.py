"""No silent duplicates or losses around checkpoints, on real Spark and real Delta tables: a
snapshot taken while the job's run lock is held, restored by default, re-run: the output and the
quarantine hold what one uninterrupted run writes; and a new checkpoint on those tables is
refused."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from jobkit import CLICK_TYPES, write_hour

from spark_jobs.checkpoints.restore import restore
from spark_jobs.checkpoints.roots import Target, resolve
from spark_jobs.checkpoints.snapshots import take_snapshot
from spark_jobs.cli import main as cli_main
from spark_jobs.contract.binding import read_binding
from spark_jobs.contract.blocks import Snapshots
from spark_jobs.contract.lock import JobLock
from spark_jobs.contract.spec import load_spec
from spark_jobs.jobs.runner import run_job

pytestmark = pytest.mark.integration

TYPES = CLICK_TYPES


@pytest.fixture(autouse=True)
def _roots(monkeypatch, tmp_path):
    monkeypatch.setenv("STATEKEEPER_CHECKPOINT_ROOTS", str(tmp_path))
    monkeypatch.setenv("STATEKEEPER_SNAPSHOT_ROOTS", str(tmp_path))


def write_part(land: Path, part: int) -> None:
    write_hour(land, part)


def spec_for(tmp: Path):
    spec = load_spec("windowed_counts").with_overrides(
        input=str(tmp / "land"),
        output=str(tmp / "out"),
        checkpoint=str(tmp / "ckpt"),
        trigger="available-now",
    )
    # HDFS-backed state: a restored checkpoint re-run in this same JVM reads its state from the
    # files (see docs/checkpoints.md on RocksDB and new drivers).
    return replace(spec, state_store="hdfs", shuffle_partitions=2, snapshots=Snapshots())


def output_rows(spark, spec) -> list[tuple]:
    df = spark.read.format("delta").load(spec.output)
    return sorted(
        (r["window_start"].strftime("%H:%M"), r["event_type"], r["count"])
        for r in df.select("window_start", "event_type", "count").collect()
    )


def quarantine_rows(spark, spec) -> list[tuple]:
    df = spark.read.format("delta").load(spec.quarantine)
    return sorted((r["raw_line"], Path(r["source_file"]).name) for r in df.collect())


# After parts 0-2 the windows of 10:00 and 11:00 are closed (the watermark is 12:46), five events
# of each type in each; every bad line of every part is kept once.
EXPECTED_OUTPUT = sorted((f"{h}:00", t, 5) for h in (10, 11) for t in TYPES)
EXPECTED_QUARANTINE = sorted(
    (line, f"part{p:02d}.json")
    for p in range(3)
    for line in (f"not json {p}", json.dumps({"event_id": f"bad{p}", "user_id": "u"}))
)


def delta_versions(table: str) -> list[str]:
    return sorted(p.name for p in (Path(table) / "_delta_log").glob("*.json"))


def test_damaged_state_fails_in_one_line_and_a_restore_repairs_it(spark, tmp_path):
    """Every state file of the last batch overwritten (a disk or a hand that broke them): the run
    stops in one line naming the checkpoint and the restore, not Spark's wrapped traceback; the
    snapshot taken before it then gives the rows of a run that never broke."""
    from spark_jobs.contract.errors import JobFailed

    spec = spec_for(tmp_path)
    target = Target(spec.checkpoint, str(tmp_path / "snaps"), spec.name, spec)
    write_part(tmp_path / "land", 0)
    run_job(spec, spark=spark)
    # the run's --input is recorded: the checkpoint commands check the folder it reads
    assert (
        read_binding(spec.checkpoint)["inputs"] == dict(spec.inputs) != load_spec(spec.name).inputs
    )
    assert resolve(spec.name, spec.checkpoint).spec.inputs == spec.inputs
    snap = take_snapshot(target)
    for f in Path(spec.checkpoint, "state").rglob("*.delta"):
        f.write_bytes(b"damaged")
    write_part(tmp_path / "land", 1)
    with pytest.raises(JobFailed) as failed:
        run_job(spec, spark=spark)
    line = str(failed.value)
    assert "\n" not in line and "could not load its state from checkpoint" in line, line
    assert f"checkpoint restore {spec.name} --checkpoint {spec.checkpoint}" in line
    restore(target, snap["id"], spark=spark)
    write_part(tmp_path / "land", 2)
    run_job(spec, spark=spark)
    assert output_rows(spark, spec) == EXPECTED_OUTPUT


def test_live_snapshot_restore_rerun_loses_and_repeats_nothing(spark, tmp_path, capsys):
    """Run, snapshot while the run lock is held (as with the continuous driver), run more,
    restore (the default: tables and query ids too), run again: output and quarantine hold
    every row once, as one uninterrupted run would. Then a new checkpoint on them is refused."""
    spec = spec_for(tmp_path)
    target = Target(spec.checkpoint, str(tmp_path / "snaps"), spec.name, spec)
    write_part(tmp_path / "land", 0)
    run_job(spec, spark=spark)
    with JobLock(spec.checkpoint, job=spec.name, purpose="run"):
        snap = take_snapshot(target)
    assert snap["live"] and snap["valid"], snap["findings"]
    write_part(tmp_path / "land", 1)
    run_job(spec, spark=spark)
    done = restore(target, snap["id"], spark=spark)
    assert done["validation"]["exit_code"] == 0, done["validation"]
    # the job's one query writes both tables: both go back, under its one new id
    assert [q["checkpoint"] for q in done["queries"]] == ["", ""]
    assert sum(q["table"].rstrip("/").endswith("_quarantine") for q in done["queries"]) == 1
    assert len({q["new_query_id"] for q in done["queries"]}) == 1
    assert all(q["table_version"] is not None for q in done["queries"])
    write_part(tmp_path / "land", 2)
    run_job(spec, spark=spark)
    assert output_rows(spark, spec) == EXPECTED_OUTPUT
    assert quarantine_rows(spark, spec) == EXPECTED_QUARANTINE

    # A new checkpoint against these tables: refused before Spark, nothing written.
    before = {t: delta_versions(t) for t in (spec.output, spec.quarantine)}
    args = ["run", spec.name, "--input", spec.input, "--output", spec.output]
    capsys.readouterr()
    assert cli_main([*args, "--checkpoint", str(tmp_path / "fresh")]) == 4
    err = capsys.readouterr().err.strip()
    assert "--new-checkpoint-for-existing-table" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "fresh").exists()
    assert {t: delta_versions(t) for t in before} == before  # nothing written
    # (The job's one query writes both tables, so there is no quarantine checkpoint to lose.)
    # Still refused once Delta has checkpointed its log and the older commits are cleaned up.
    spark.sql(f"ALTER TABLE delta.`{spec.output}` SET TBLPROPERTIES (delta.checkpointInterval = 1)")
    spark.sql(
        f"ALTER TABLE delta.`{spec.quarantine}` SET TBLPROPERTIES (delta.checkpointInterval = 1)"
    )
    for table in (spec.output, spec.quarantine):
        log = Path(table) / "_delta_log"
        cp = max(int(p.name[:20]) for p in log.glob("*.checkpoint*.parquet"))
        for p in log.glob("*.json"):
            if int(p.name[:20]) < cp:
                p.unlink()
    assert cli_main([*args, "--checkpoint", str(tmp_path / "fresh")]) == 4
    assert not (tmp_path / "fresh").exists()
