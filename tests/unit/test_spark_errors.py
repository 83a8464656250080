"""A run tells Spark's errors from its own bugs by type: pyspark's exception classes (the ones a
captured JVM error becomes too) turn into one ``JobFailed`` line, exit 1; anything else keeps its
traceback. Built from pyspark's own classes, no JVM."""

from __future__ import annotations

from dataclasses import replace

import pytest
from pyspark.errors import (
    AnalysisException,
    IllegalArgumentException,
    PySparkValueError,
    StreamingQueryException,
)

from spark_jobs.contract.errors import JobFailed, UserError
from spark_jobs.contract.spec import load_spec
from spark_jobs.jobs.runner import failure
from spark_jobs.runtime import spark_errors

pytestmark = pytest.mark.unit

STREAM_FAILED = (
    "[STREAM_FAILED] Query [id = 1f, runId = 2e] terminated with exception: "
    "[DELTA_FAILED_TO_MERGE_FIELDS] Failed to merge fields 'total' and 'total'.\n"
    "\n"
    "=== Streaming Query ===\n"
    "Identifier: user_counts [id = 1f, runId = 2e]\n"
)


@pytest.mark.parametrize(
    "exc, line",
    [
        (
            StreamingQueryException(message=STREAM_FAILED),
            "[STREAM_FAILED] Query [id = 1f, runId = 2e] terminated with exception: "
            "[DELTA_FAILED_TO_MERGE_FIELDS] Failed to merge fields 'total' and 'total'.",
        ),
        (
            AnalysisException(message="\n[PATH_NOT_FOUND] Path does not exist: /x.\n  at y"),
            "[PATH_NOT_FOUND] Path does not exist: /x.",
        ),
        (IllegalArgumentException(message="bad trigger"), "bad trigger"),
        (
            # pyspark's own error, from its bundled conditions: the condition leads the line.
            PySparkValueError(errorClass="CANNOT_BE_EMPTY", messageParameters={"item": "path"}),
            "[CANNOT_BE_EMPTY] At least one path must be specified.",
        ),
    ],
)
def test_spark_errors_become_one_job_failed_line(exc, line):
    assert isinstance(exc, spark_errors.SPARK_ERRORS)
    failed = failure(load_spec("user_counts"), exc)
    assert isinstance(failed, JobFailed) and failed.exit_code == 1
    assert str(failed) == f"job user_counts failed: {line}"


def test_a_spark_error_with_no_text_is_named_by_its_class():
    assert spark_errors.reason(StreamingQueryException(message="\n=== Streaming Query ===\n")) == (
        "StreamingQueryException"
    )


def test_kafka_data_loss_names_the_topic_and_the_fix():
    spec = replace(
        load_spec("sessions"), inputs={"clickstream": "kafka://127.0.0.1:9092/clicks-gone"}
    )
    exc = StreamingQueryException(
        message="[STREAM_FAILED] Query terminated with exception: [KAFKA_DATA_LOSS.PARTITION_"
        "OFFSET_CHANGED] Some data may have been lost because they are not available in Kafka"
    )
    msg = str(failure(spec, exc))
    assert "\n" not in msg and "clicks-gone" in msg and "fail_on_data_loss: false" in msg


@pytest.mark.parametrize(
    "exc",
    [
        ValueError("a bug in our code"),
        KeyError("state"),
        TypeError("not a bucket state value: int"),
        UserError("a user's mistake, already one line"),
        # A class whose name is Spark's but which is not pyspark's: names decide nothing.
        type("StreamingQueryException", (Exception,), {})("lookalike"),
    ],
)
def test_other_errors_are_not_spark_failures(exc):
    assert not isinstance(exc, spark_errors.SPARK_ERRORS)
