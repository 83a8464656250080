"""A batch's two table writes run side by side (``sinks.side_by_side``): both at once, each with
the batch's local properties (its job group, as Spark's own jobs for the batch have), and a
failure of either is the batch's failure, raised after the other has finished. So a kill can
leave either table alone with the batch: the batch run again skips the one that has it and
writes the other, once."""

import json
import threading

import pytest

from spark_jobs.io import key_metrics, sinks

pytestmark = pytest.mark.integration


def test_writes_run_at_once_with_the_batchs_properties(spark):
    sc = spark.sparkContext
    met = threading.Barrier(2, timeout=20)  # broken (and raised) if one write waits for the other
    groups: list[str | None] = []

    def write() -> None:
        met.wait()
        groups.append(sc.getLocalProperty("spark.jobGroup.id"))

    sc.setJobGroup("batch-7", "batch 7")
    try:
        sinks.side_by_side(spark, [write, write])
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    assert groups == ["batch-7", "batch-7"]


def test_a_failed_write_fails_the_batch_after_the_other_finished(spark):
    finished: list[str] = []
    release = threading.Event()

    def fails() -> None:
        release.set()
        raise RuntimeError("quarantine table unwritable")

    def slow() -> None:
        release.wait(20)
        finished.append("output")

    with pytest.raises(RuntimeError, match="quarantine table unwritable"):
        sinks.side_by_side(spark, [slow, fails])
    assert finished == ["output"]
    with pytest.raises(RuntimeError, match="quarantine table unwritable"):
        sinks.side_by_side(spark, [fails, slow])
    assert finished == ["output", "output"]


@pytest.mark.parametrize("has_it", ["quarantine", "output"])
def test_a_batch_run_again_writes_only_the_table_that_lacks_it(spark, tmp_path, has_it):
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "metadata").write_text(json.dumps({"id": f"7d1e-{has_it}"}) + "\n")
    batch = spark.createDataFrame(
        [("u1", 3, None, None), ("u2", 5, None, None), (None, None, ("bad", "malformed"), None)],
        f"user_id string, n bigint, {sinks.QUARANTINE_COL} struct<raw_line:string,reason:string>, "
        f"{sinks.KEYS_COL} {key_metrics.DDL}",
    )
    out, quarantine = str(tmp_path / "out"), str(tmp_path / "q")
    app = sinks.query_id(str(ckpt))
    if has_it == "quarantine":  # the kill came after the quarantine's commit, before the output's
        bad = batch.where(f"{sinks.QUARANTINE_COL} IS NOT NULL").select(f"{sinks.QUARANTINE_COL}.*")
        sinks._write(bad, quarantine, app, 0, None, rows=1)
    else:
        good = batch.where(f"{sinks.QUARANTINE_COL} IS NULL").select("user_id", "n")
        sinks._write(good, out, app, 0, None, rows=2)
    sinks.make_batch_writer(out, quarantine, str(ckpt), "job", ["user_id", "n"])(batch, 0)
    read = spark.read.format("delta")
    assert sorted(tuple(r) for r in read.load(out).collect()) == [("u1", 3), ("u2", 5)]
    assert [tuple(r) for r in read.load(quarantine).collect()] == [("bad", "malformed")]
