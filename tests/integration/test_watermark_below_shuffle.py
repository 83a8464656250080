"""The runner sets a job's watermark below the parsed lines' one shuffle
(spark_jobs.io.watermarks): the stateful operator reads that shuffle with no second one, bad lines
never move the watermark, and the batch's event-time figures are the good events' own."""

import json
import statistics

import pytest
from jobkit import T0, at, job_spec, rows, write_lines

from spark_jobs.generate import generate
from spark_jobs.jobs.runner import run_job, start_query
from spark_jobs.runtime.event_time_stats import METRIC_PREFIX, spark_time
from spark_jobs.runtime.progress import read_progress

pytestmark = pytest.mark.integration


def click(eid, user, minute, etype="page_view"):
    return {
        "event_id": eid,
        "user_id": user,
        "event_type": etype,
        "page": "/p",
        "duration_sec": 1,
        "event_time": at(minute),
    }


def _ms(minute: float) -> int:
    return int(T0.timestamp() * 1000) + int(minute * 60_000)


def _shuffles(query) -> tuple[int, int]:
    """(shuffles, reused shuffles) in the plan of the query's last batch (the no-data batch
    that follows the data, where there is one: the operators and shuffles are the same)."""
    plan = query._jsq.streamingQuery().lastExecution().executedPlan().toString()
    nodes = [line.lstrip(" :+-!") for line in plan.splitlines()]
    return sum(n.startswith("Exchange") for n in nodes), sum(
        n.startswith("ReusedExchange") for n in nodes
    )


@pytest.mark.parametrize("job", ["sessions", "user_counts", "order_payments"])
def test_the_stateful_operator_reads_the_one_shuffle(spark, tmp_path, job):
    spec = job_spec(job, tmp_path)
    for kind, folder in spec.inputs.items():  # a few events and a bad line for each input
        generate(kind, folder, 20, keys=5, seed=4, bad_rate=0.2)
    before = spark.conf.get("spark.sql.shuffle.partitions")
    # the state's partitions, as a run sets them from the spec
    spark.conf.set("spark.sql.shuffle.partitions", str(spec.shuffle_partitions))
    try:
        query = start_query(spark, spec, f"one-shuffle-{job}")
        query.awaitTermination()
        # One shuffle of each input's parsed lines: the job's operator reads it, and the bad
        # records read the same one again (Spark reuses it); before, a second shuffle sat under
        # the operator, above the watermark (order_payments' join: one more per input).
        assert _shuffles(query) == (len(spec.kinds), len(spec.kinds))
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)


def test_bad_lines_pass_the_watermark_without_moving_it(spark, tmp_path):
    good = [click("a1", "u1", 0), click("a2", "u1", 20), click("b1", "u2", 5)]
    good.append(click("z1", "u3", 200))  # the newest good event: the next watermark is 190
    bad = [
        json.dumps(click("f1", "u4", 60 * 24 * 365 * 70)),  # 70 years ahead: quarantined
        json.dumps({**click("m1", "u5", 500), "user_id": None}),  # a valid time, a bad line
        '{"event_id": "x", "event_time": "2026-03-15T13:00:00Z"',  # malformed
    ]
    write_lines(tmp_path / "land" / "clickstream", "a.json", [*good[:2], *bad, *good[2:]])
    spec = job_spec("sessions", tmp_path)
    one_bucket = job_spec("sessions", tmp_path, params={**spec.params, "buckets": 1})
    summary = run_job(one_bucket, spark=spark)

    assert summary.quarantined == 3 and summary.batches == 2
    first, second = read_progress(str(tmp_path / "ckpt"))
    minutes = [0, 20, 5, 200]
    assert first["eventTime"]["max"] == spark_time(_ms(200))
    assert first["eventTime"]["min"] == spark_time(_ms(0))
    assert first["eventTime"]["avg"] == spark_time(int(statistics.mean(map(_ms, minutes))))
    assert second["eventTime"]["watermark"] == spark_time(_ms(190))
    assert "max" not in second["eventTime"]  # a batch with no events reports none, as Spark
    for record in (first, second):
        assert not any(k.startswith(METRIC_PREFIX) for k in record.get("observedMetrics") or {})
    # u1's and u2's sessions are written; u3's (minute 200) stays open under the watermark
    got = rows(spark, str(tmp_path / "out"), ["user_id"])
    assert [(r[0], r[4]) for r in got] == [("u1", 2), ("u2", 1)]
