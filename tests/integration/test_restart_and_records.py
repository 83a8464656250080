"""Bad records are quarantined with exact counts, late events are dropped and counted, and a
checkpoint refuses a spec it was not written with. (That split input gives the tables of one run,
for every job, is test_batching_invariance.py.)"""

import json

import pytest
from jobkit import job_spec

from spark_jobs.contract.errors import LockHeld, UserError
from spark_jobs.contract.lock import JobLock
from spark_jobs.generate import generate
from spark_jobs.jobs.runner import run_job

pytestmark = pytest.mark.integration


def test_bad_records_are_quarantined_with_the_generated_counts(spark, tmp_path):
    report = generate(
        "clickstream", str(tmp_path / "land" / "clickstream"), 1000, keys=50, seed=3, bad_rate=0.07
    )
    summary = run_job(job_spec("sessions", tmp_path), spark=spark)
    q = spark.read.format("delta").load(str(tmp_path / "out" / "_quarantine"))
    assert summary.quarantined == report.bad == q.count() == 70
    reasons = {r["reason"] for r in q.select("reason").distinct().collect()}
    assert {"malformed JSON", "missing field event_id"} <= reasons
    assert any(r.startswith("field event_id must be a string") for r in reasons)
    row = q.first()
    assert (
        row["source_file"].endswith(".json")
        and row["raw_line"]
        and row["quarantined_at"] is not None
    )
    assert q.where("job != 'sessions' OR kind != 'clickstream'").count() == 0


# Not windowed_counts: a streaming aggregation counts the partial aggregates it drops, not rows.
@pytest.mark.parametrize("job", ["sessions", "dedup_events"])
def test_late_events_are_dropped_and_counted(spark, tmp_path, job):
    folder = str(tmp_path / "land" / "clickstream")
    generate("clickstream", folder, 500, keys=20, seed=5)
    spec = job_spec(job, tmp_path)
    run_job(spec, spark=spark)
    late = generate("clickstream", folder, 500, keys=20, seed=6, late_rate=0.1)
    summary = run_job(spec, spark=spark)
    assert late.late == 50
    assert summary.dropped_by_watermark == late.late
    progress = [
        json.loads(x)
        for x in (tmp_path / "ckpt" / "_statekeeper" / "progress.jsonl").read_text().splitlines()
    ]
    assert (
        # heartbeat records (a batch running over 30 s, as on a loaded machine) carry no operators
        sum(o["numRowsDroppedByWatermark"] for p in progress for o in p.get("stateOperators", []))
        == late.late
    )


def test_spec_change_the_checkpoint_depends_on_is_refused(spark, tmp_path):
    generate("clickstream", str(tmp_path / "land" / "clickstream"), 100, keys=5, seed=1)
    run_job(job_spec("user_counts", tmp_path), spark=spark)
    # Spark pinned it in the offset log: the checkpoint validator names it before Spark starts.
    with pytest.raises(
        UserError, match=r"CONF_SHUFFLE_PARTITIONS.*shuffle.partitions=2, the spec says 3"
    ):
        run_job(job_spec("user_counts", tmp_path, shuffle_partitions=3), spark=spark)
    # Not pinned by Spark but what the state was built with: the spec binding names it.
    with pytest.raises(
        UserError,
        match=r"written with watermark_seconds=600.0 but .* gives watermark_seconds=1200.0",
    ):
        run_job(job_spec("user_counts", tmp_path, watermark_seconds=1200.0), spark=spark)


def test_second_writer_is_refused_while_the_lock_is_held(spark, tmp_path):
    generate("clickstream", str(tmp_path / "land" / "clickstream"), 10, keys=2, seed=1)
    spec = job_spec("user_counts", tmp_path)
    with (
        JobLock(spec.checkpoint, job="user_counts"),
        pytest.raises(LockHeld, match="is in use by run of job user_counts"),
    ):
        run_job(spec, spark=spark)
    assert not (tmp_path / "out").exists()  # nothing ran
