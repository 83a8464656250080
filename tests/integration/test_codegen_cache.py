"""A job's micro-batches reuse the classes Spark generated for the batches before them.

Spark keeps generated classes in one cache per JVM (``spark.sql.codegen.cache.maxEntries``,
100 by default). One ``user_counts`` batch (parse and quarantine, the stateful step, Delta's
MERGE and its log) needs more than 100, so with the default every batch evicted what the next
one needed and compiled 45 to 64 classes again. The session's setting
(``spark_jobs.runtime.session``) leaves room for them all."""

from __future__ import annotations

import pytest
from jobkit import at, job_spec, write_lines

from spark_jobs.jobs.runner import run_job
from spark_jobs.runtime.session import CODEGEN_CACHE

pytestmark = pytest.mark.integration

BATCHES = 3


def _clicks(n: int) -> list[dict]:
    return [
        {
            "event_id": f"f{n}-{i}",
            "user_id": f"u{(n * 7 + i) % 11}",
            "event_type": ("page_view", "checkout", "purchase")[i % 3],
            "page": "/p",
            "duration_sec": 1,
            "event_time": at(n + i / 60),
        }
        for i in range(20)
    ]


def test_a_jobs_later_batches_compile_almost_no_class_again(spark, tmp_path):
    assert int(spark.sparkContext.getConf().get(CODEGEN_CACHE)) >= 1000
    spec = job_spec("user_counts", tmp_path, max_files_per_trigger=1)
    land = tmp_path / "land" / "clickstream"
    for n in range(2):  # a first run: the table's creation, then a first MERGE
        write_lines(land, f"f{n}.json", _clicks(n))
    assert run_job(spec, spark=spark).batches == 2  # the job's classes are generated once
    for n in range(2, BATCHES + 2):
        write_lines(land, f"f{n}.json", _clicks(n))
    metrics = spark._jvm.org.apache.spark.metrics.source.CodegenMetrics
    before = metrics.METRIC_COMPILATION_TIME().getCount()
    got = run_job(spec, spark=spark)
    compiled = metrics.METRIC_COMPILATION_TIME().getCount() - before
    assert got.batches == BATCHES and got.rows_written > 0, got
    # With Spark's default cache of 100 this run compiled 143 classes; with 1,000, 15 (a run's
    # start has a few of its own).
    assert compiled <= 10 * BATCHES, f"{compiled} classes compiled again in {BATCHES} batches"
