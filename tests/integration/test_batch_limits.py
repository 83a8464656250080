"""A run with a time limit (``--run-for``) stops between batches, never inside one: a batch cut
short is planned again the same by the next run, so a batch longer than every run's time would
be cut, replayed and cut again for ever."""

from __future__ import annotations

import time

import pytest

from spark_jobs.jobs import query_wait

pytestmark = pytest.mark.integration

BATCH_MS = 4000  # how long the batch runs: well past the run's time limit


def test_a_time_limit_stops_the_run_between_batches(spark, tmp_path):
    land, ck = tmp_path / "land", tmp_path / "ck"
    land.mkdir()
    (land / "a.json").write_text("{}\n")
    slow = (
        spark.readStream.format("text")
        .load(str(land))
        .selectExpr(
            f"reflect('java.lang.Thread', 'sleep', cast({BATCH_MS} as bigint)) as slept", "value"
        )
    )
    q = (
        slow.writeStream.format("noop")
        .option("checkpointLocation", str(ck))
        .trigger(processingTime="1 second")
        .start()
    )
    try:
        deadline = time.time() + 120
        while not (ck / "offsets" / "0").exists():  # batch 0 is planned: it runs its 4 s now
            assert time.time() < deadline and q.isActive, "batch 0 never started"
            time.sleep(0.05)

        query_wait.wait([q], run_for=0.5)

        assert not q.isActive
        assert (ck / "commits" / "0").exists(), "the run was cut inside batch 0"
    finally:
        if q.isActive:
            q.stop()
