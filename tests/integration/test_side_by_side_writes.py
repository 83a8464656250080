"""A batch's two table writes run side by side (``sinks.side_by_side``): both at once, each with
the batch's local properties (its job group, as Spark's own jobs for the batch have), and a
failure of either is the batch's failure, raised after the other has finished."""

import threading

import pytest

from spark_jobs.io import sinks

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
