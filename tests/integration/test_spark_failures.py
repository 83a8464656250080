"""Spark's errors as a real JVM raises them, told apart by type: a query that fails under a run is
one ``JobFailed`` line and is stopped; a JVM error pyspark does not convert is named by its Java
exception; quality reads a table without a change feed whole, by Delta's error condition."""

from __future__ import annotations

import pytest
from jobkit import job_spec
from py4j.protocol import Py4JJavaError
from pyspark.errors import StreamingQueryException

from spark_jobs.contract.errors import JobFailed
from spark_jobs.generate import generate
from spark_jobs.jobs.runner import run_job
from spark_jobs.quality.incremental import read_slice
from spark_jobs.runtime import spark_errors

pytestmark = pytest.mark.integration


def test_a_query_that_fails_is_one_job_failed_line_and_is_stopped(spark, tmp_path):
    generate("clickstream", str(tmp_path / "land" / "clickstream"), 50, keys=5, seed=1)
    # The output table exists with another schema: the first batch's append fails in Delta.
    spark.createDataFrame([(1,)], "event_id INT").write.format("delta").save(str(tmp_path / "out"))
    with pytest.raises(JobFailed) as err:
        run_job(job_spec("dedup_events", tmp_path), spark=spark)
    msg = str(err.value)
    assert msg.startswith("job dedup_events failed: [STREAM_FAILED]") and "\n" not in msg
    assert err.value.exit_code == 1
    assert isinstance(err.value.__cause__, StreamingQueryException)
    assert not spark.streams.active


def test_a_write_refused_in_the_batchs_function_is_named_by_its_cause(spark, tmp_path):
    """A table constraint a user added refuses a batch's MERGE. The error reaches the run as py4j's
    "An error occurred while calling o1.execute" inside the batch function's traceback: the line
    names Delta's condition and the constraint. The batch did not commit; without the constraint
    the next run writes it, once."""
    land = tmp_path / "land" / "clickstream"
    generate("clickstream", str(land), 60, keys=3, seed=1)
    spec = job_spec("user_counts", tmp_path)
    run_job(spec, spark=spark)
    out = str(tmp_path / "out")
    most = spark.read.format("delta").load(out).agg({"total_events": "max"}).first()[0]
    spark.sql(f"ALTER TABLE delta.`{out}` ADD CONSTRAINT capped CHECK (total_events <= {most})")
    generate("clickstream", str(land), 60, keys=3, seed=2)

    with pytest.raises(JobFailed) as err:
        run_job(spec, spark=spark)

    line = str(err.value)
    assert "\n" not in line and len(line) <= spark_errors.LINE_LIMIT, line
    assert line.startswith("job user_counts failed: [STREAM_FAILED] the query stopped: "), line
    assert "DeltaInvariantViolationException: [DELTA_VIOLATE_CONSTRAINT_WITH_VALUES] CHECK " in line
    assert f"capped (total_events <= {most})" in line and "Py4JJavaError" not in line, line
    spark.sql(f"ALTER TABLE delta.`{out}` DROP CONSTRAINT capped")
    run_job(spec, spark=spark)
    totals = spark.read.format("delta").load(out).agg({"total_events": "sum"}).first()[0]
    assert totals == 120


def test_a_jvm_error_pyspark_does_not_convert_is_named_by_its_java_exception(spark):
    with pytest.raises(Py4JJavaError) as err:
        spark._jvm.java.util.ArrayList().get(5)
    assert isinstance(err.value, spark_errors.SPARK_ERRORS)
    assert spark_errors.reason(err.value).startswith("IndexOutOfBoundsException: ")


def test_a_table_without_a_change_feed_is_validated_whole(spark, tmp_path):
    plain, fed = str(tmp_path / "plain"), str(tmp_path / "fed")
    for i in range(3):
        rows = spark.range(i, i + 1)
        rows.write.format("delta").mode("append").option(
            "delta.enableChangeDataFeed", "false"
        ).save(plain)
        rows.write.format("delta").mode("append").save(fed)  # the session's default: a feed
    whole = read_slice(spark, plain, last_version=0)
    assert whole is not None and (whole.mode, whole.df.count()) == ("no change feed", 3)
    new = read_slice(spark, fed, last_version=0)
    assert new is not None and (new.mode, new.df.count()) == ("incremental", 2)
