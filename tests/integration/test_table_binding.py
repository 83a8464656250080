"""A checkpoint is bound to its tables, on real Spark and real Delta (windowed_counts, HDFS state):

- a committed checkpoint run into another ``--output`` is refused in one line (its pending input
  would go there and the bound table would never get it), unless ``--rebind-tables`` says so;
- a committed checkpoint whose table was removed is refused too (a run would start a table
  without the committed batches' rows), unless ``--rebind-tables`` starts a new one there; a
  table removed under a running query fails its next batch;
- restore and rollback of a checkpoint that writes a non-default ``--output`` put back that
  table, not the spec's: re-run, the table equals a reference run and the spec's table is
  never made.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from jobkit import CLICK_TYPES, write_hour

from spark_jobs.checkpoints.layout import read_layout
from spark_jobs.checkpoints.restore import restore
from spark_jobs.checkpoints.rollback import rollback
from spark_jobs.checkpoints.roots import Target
from spark_jobs.checkpoints.snapshots import take_snapshot
from spark_jobs.checkpoints.validate import validate_checkpoint
from spark_jobs.cli import build_parser
from spark_jobs.contract import binding, delta
from spark_jobs.contract.blocks import Snapshots
from spark_jobs.contract.errors import ExitCode, UserError
from spark_jobs.contract.spec import load_spec
from spark_jobs.jobs.runner import run_job

pytestmark = pytest.mark.integration

JOB = "windowed_counts"
TYPES = CLICK_TYPES


@pytest.fixture(autouse=True)
def _data(monkeypatch, tmp_path):
    """The spec's own paths (its default table and checkpoint) under this test's folder."""
    monkeypatch.setenv("STATEKEEPER_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("STATEKEEPER_CHECKPOINT_ROOTS", str(tmp_path))
    monkeypatch.setenv("STATEKEEPER_SNAPSHOT_ROOTS", str(tmp_path))


def write_part(land: Path, part: int) -> None:
    write_hour(land, part)


def spec_for(tmp: Path, output: Path, checkpoint: Path | None = None):
    """The job on ``tmp/land`` into ``output``; its checkpoint the spec's own unless given (as
    ``run JOB --output X`` without ``--checkpoint``)."""
    spec = load_spec(JOB).with_overrides(
        input=str(tmp / "land"),
        output=str(output),
        checkpoint=str(checkpoint) if checkpoint else None,
        trigger="available-now",
    )
    # HDFS-backed state: a restored checkpoint re-run in this same JVM reads its state from the
    # files (see docs/checkpoints.md on RocksDB and new drivers).
    return replace(spec, state_store="hdfs", shuffle_partitions=2, snapshots=Snapshots())


def table_rows(spark, uri: str) -> list[tuple]:
    """A table's rows, sorted; a quarantine row as (raw line, reason, file name): its time and
    folder differ from run to run."""
    df = spark.read.format("delta").load(uri)
    if "raw_line" in df.columns:
        got = [(r.raw_line, r.reason, Path(r.source_file).name) for r in df.collect()]
    else:
        got = [tuple(r) for r in df.collect()]
    return sorted(got)


@pytest.fixture(scope="module")
def reference(spark, tmp_path_factory):
    """Output and quarantine rows of one uninterrupted run over parts 0 and 1."""
    tmp = tmp_path_factory.mktemp("reference")
    for part in range(2):
        write_part(tmp / "land", part)
    spec = spec_for(tmp, tmp / "out", tmp / "ckpt")
    run_job(spec, spark=spark)
    out, bad = table_rows(spark, spec.output), table_rows(spark, spec.quarantine)
    assert len(out) == 3 and len(bad) == 4  # the 10:00 windows closed; every bad line kept
    return out, bad


def test_a_committed_checkpoint_refuses_another_table_unless_rebound(spark, tmp_path, reference):
    """The spec's checkpoint wrote table A; a run of it into B is refused (exit 4, one line
    naming both tables and both ways out) and B is never made; with --rebind-tables the
    next batches go to B and A keeps what it had: together every row once."""
    a, b = tmp_path / "data" / "tables" / "a", tmp_path / "data" / "tables" / "b"
    write_part(tmp_path / "land", 0)
    spec_a = spec_for(tmp_path, a)
    run_job(spec_a, spark=spark)
    a_before = table_rows(spark, str(a))
    write_part(tmp_path / "land", 1)

    spec_b = spec_for(tmp_path, b)
    assert spec_b.checkpoint == spec_a.checkpoint  # `run JOB --output B`, no --checkpoint
    with pytest.raises(UserError) as refused:
        run_job(spec_b, spark=spark)
    line = str(refused.value)
    assert refused.value.exit_code == ExitCode.UNSAFE and len(line.splitlines()) == 1
    assert str(a) in line and str(b) in line and "--checkpoint" in line
    assert "--rebind-tables" in line
    assert not b.exists() and table_rows(spark, str(a)) == a_before
    assert binding.bound_tables(spec_a.checkpoint) == {
        "output": spec_a.output,
        "quarantine": spec_a.quarantine,
    }
    args = build_parser().parse_args(["run", JOB, "--output", str(b), "--rebind-tables"])
    assert args.rebind_tables  # the command line's way out

    run_job(spec_b, spark=spark, rebind_tables=True)
    assert binding.bound_tables(spec_a.checkpoint)["output"] == str(b)
    assert table_rows(spark, str(a)) == a_before  # the rebound checkpoint left A alone
    both = sorted(table_rows(spark, str(a)) + table_rows(spark, str(b)))
    assert both == reference[0]  # nothing lost, nothing twice


def _two_arrivals(spark, tmp_path):
    """``run JOB --output X`` (the spec's checkpoint, a non-default table) over part 0, then
    over part 1; the target of ``checkpoint ... --job JOB`` (the spec's table is not X)."""
    x = tmp_path / "data" / "tables" / "x"
    spec = spec_for(tmp_path, x)
    target = Target(spec.checkpoint, str(tmp_path / "snaps"), JOB, load_spec(JOB))
    assert target.spec is not None and target.spec.output != spec.output
    write_part(tmp_path / "land", 0)
    run_job(spec, spark=spark)
    return spec, target


def test_restore_puts_back_the_bound_table_not_the_specs(spark, tmp_path, reference):
    spec, target = _two_arrivals(spark, tmp_path)
    snap = take_snapshot(target)
    write_part(tmp_path / "land", 1)
    run_job(spec, spark=spark)
    done = restore(target, snap["id"], spark=spark)
    run_job(spec, spark=spark)
    assert (table_rows(spark, spec.output), table_rows(spark, spec.quarantine)) == reference
    assert not Path(target.spec.output).exists()  # the spec's default table: never touched
    assert done["tables_from"] == "binding"
    assert sorted(done["tables"]) == sorted([spec.output, spec.quarantine])
    assert all(q["table_version"] is not None for q in done["queries"])


def test_rollback_puts_back_the_bound_table_not_the_specs(spark, tmp_path, reference):
    spec, target = _two_arrivals(spark, tmp_path)
    first = read_layout(spec.checkpoint).last_committed
    write_part(tmp_path / "land", 1)
    run_job(spec, spark=spark)
    assert delta.txn_log(spec.output).latest  # the second run wrote X
    done = rollback(target, to_batch=first, spark=spark)
    run_job(spec, spark=spark)
    assert (table_rows(spark, spec.output), table_rows(spark, spec.quarantine)) == reference
    assert not Path(target.spec.output).exists()  # the spec's default table: never touched
    assert done["tables_from"] == "binding"
    assert {q["table"] for q in done["queries"]} == {spec.output, spec.quarantine}
    assert any(q["table_version"] is not None for q in done["queries"])


def test_a_committed_checkpoints_removed_table_is_refused_unless_rebound(
    spark, tmp_path, reference
):
    """Someone removed the table the checkpoint filled: the next run is refused (exit 4, one
    line) and makes no table; with --rebind-tables a new table there gets the next batches, and
    the table as it was plus the new one hold every row once. The run after needs no flag."""
    a = tmp_path / "data" / "tables" / "a"
    write_part(tmp_path / "land", 0)
    spec = spec_for(tmp_path, a)
    run_job(spec, spark=spark)
    before = table_rows(spark, str(a))
    shutil.rmtree(a)
    write_part(tmp_path / "land", 1)
    # the DAGs' validate step says so before a submit, and so does the health page
    (gone,) = validate_checkpoint(spec.checkpoint, spec).errors
    assert gone.code == "TABLE_GONE" and f"output table {a} is gone" in gone.message
    assert "--rebind-tables" in gone.fix

    with pytest.raises(UserError) as refused:
        run_job(spec, spark=spark)
    line = str(refused.value)
    assert refused.value.exit_code == ExitCode.UNSAFE and len(line.splitlines()) == 1
    assert line == f"{gone.message}; {gone.fix}"
    assert not a.exists()

    run_job(spec, spark=spark, rebind_tables=True)
    assert sorted(before + table_rows(spark, str(a))) == reference[0]
    run_job(spec, spark=spark)  # bound anew: nothing to say
    assert validate_checkpoint(spec.checkpoint, spec).errors == []


def test_a_table_removed_under_a_running_query_fails_its_next_batch(spark, tmp_path):
    from spark_jobs.io import sinks

    ck, out = tmp_path / "ckpt", tmp_path / "out"
    ck.mkdir()
    (ck / "metadata").write_text('{"id": "q-1"}\n')
    write = sinks.make_batch_writer(str(out), str(out / "_quarantine"), str(ck), "j", ["n"])
    batch = spark.createDataFrame([(1, None)], "n int, _quarantine struct<raw_line: string>")
    write(batch, 0)
    assert delta.exists(str(out))
    shutil.rmtree(out)
    with pytest.raises(RuntimeError, match=f"output table {out} was removed while job j ran"):
        write(batch, 1)
    assert not out.exists()


def test_a_copy_of_the_checkpoint_that_ran_on_makes_the_original_refuse(spark, tmp_path):
    """``cp -r`` of a checkpoint keeps its query id. The copy ran into the table; a run of the
    original then planned batches with ids the table already had, Delta skipped them as written,
    and the rows of the files the copy never read were lost. The original is refused (exit 4,
    one line), and the rollback the line names lets it take over: every row once."""
    ref = tmp_path / "ref"
    for part in range(3):
        write_part(ref / "land", part)
    spec_ref = spec_for(ref, ref / "out", ref / "ckpt")
    run_job(spec_ref, spark=spark)
    expected = table_rows(spark, spec_ref.output), table_rows(spark, spec_ref.quarantine)

    out, original, copy = tmp_path / "out", tmp_path / "ckpt", tmp_path / "ckpt-copy"
    spec = spec_for(tmp_path, out, original)
    write_part(tmp_path / "land", 0)
    run_job(spec, spark=spark)
    shutil.copytree(original, copy)
    write_part(tmp_path / "land", 1)
    run_job(replace(spec, checkpoint=str(copy)), spark=spark)  # the copy moves the table on
    write_part(tmp_path / "land", 2)

    last = read_layout(str(original)).last_committed
    with pytest.raises(UserError) as refused:
        run_job(spec, spark=spark)
    line = str(refused.value)
    assert refused.value.exit_code == ExitCode.UNSAFE and len(line.splitlines()) == 1
    assert f"which checkpoint {original} never planned" in line
    assert f"checkpoint rollback --checkpoint {original} --to-batch {last}" in line

    target = Target(str(original), str(tmp_path / "snaps"), JOB, spec)
    rollback(target, to_batch=last, spark=spark)
    run_job(spec, spark=spark)
    assert (table_rows(spark, spec.output), table_rows(spark, spec.quarantine)) == expected
