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
from spark_jobs.jobs.run_failures import failure
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
            "[STREAM_FAILED] the query stopped: "
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


# What a query whose Python worker failed raises: the JVM's stage failure leads the first line,
# then the worker's whole traceback and Spark's JVM trace (about 11 KB).
WORKER_FAILED = (
    "[STREAM_FAILED] Query [id = 1f, runId = 2e] terminated with exception: Job aborted due to "
    "stage failure: Task 0 in stage 3.0 failed 1 times, most recent failure: Lost task 0.0 in "
    "stage 3.0 (TID 3) (10.1.2.3 executor driver): org.apache.spark.api.python.PythonException: "
    "Traceback (most recent call last):\n"
    + '  File "/opt/spark/python/pyspark/worker.py", line 1, in main\n    process()\n' * 120
    + "ValueError: state of key 'u7' is not a bucket\n"
    + "\tat org.apache.spark.api.python.BasePythonRunner.handlePythonException(x.scala:1)\n" * 40
)


def test_a_failed_runs_line_is_one_short_line_naming_the_python_error():
    exc = StreamingQueryException(message=WORKER_FAILED)
    assert len(str(exc)) > 10_000
    line = str(failure(load_spec("user_counts"), exc))
    assert "\n" not in line and len(line) <= 300, (len(line), line)
    assert line.startswith("job user_counts failed: [STREAM_FAILED]")
    assert line.endswith("ValueError: state of key 'u7' is not a bucket"), line


def test_a_long_single_line_is_cut_to_the_limit():
    exc = IllegalArgumentException(message="x" * 11_000)
    line = str(failure(load_spec("user_counts"), exc))
    assert len(line) <= 300 and line.endswith("…")


def test_a_second_watermark_names_the_fix_not_sparks_config():
    # Spark 4.2's text when a job's build calls withWatermark on an input the runner watermarked
    exc = StreamingQueryException(
        message="[STREAM_FAILED] Query [id = 1f, runId = 2e] terminated with exception: "
        "Redefining watermark is disallowed. You can set the config "
        "'spark.sql.streaming.statefulOperator.allowMultiple' to 'false' to restore the "
        "previous behavior.\n\n=== Streaming Query ===\n"
    )
    msg = str(failure(load_spec("user_counts"), exc))
    assert msg.startswith("job user_counts failed: its build sets a watermark")
    assert "watermarks.on(" in msg and "allowMultiple" not in msg and "\n" not in msg


# Spark 4.2's text when a task cannot read one of a batch's files, under the foreachBatch wrapper
def _read_failed(url: str) -> StreamingQueryException:
    return StreamingQueryException(
        message="[STREAM_FAILED] Query [id = 1f, runId = 2e] terminated with exception: "
        "[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred in the user provided function in "
        "foreach batch sink. Reason: py4j.protocol.Py4JJavaError: An error occurred while "
        "calling o470.collectToPython.\n: org.apache.spark.SparkException: [FAILED_READ_FILE."
        f"NO_HINT] Encountered error while reading file {url}.  SQLSTATE: KD001\n"
        "\tat org.apache.spark.sql.errors.QueryExecutionErrors$.cannotReadFilesError(x:940)\n"
        "Caused by: java.io.EOFException: Unexpected end of input stream\n\tat x.y(z:1)\n"
    )


def test_a_file_spark_cannot_read_is_named_with_its_cause():
    spec = load_spec("user_counts").with_overrides(input="/srv/land/my clicks")
    line = str(failure(spec, _read_failed("file:///srv/land/my%20clicks/a.json.gz")))
    assert line.startswith(
        "job user_counts failed: cannot read landing file /srv/land/my clicks/a.json.gz "
        "(EOFException: Unexpected end of input stream); its batch did not commit"
    ), line
    # Not a landing file (a table's): named, without the landing folder's advice.
    line = str(failure(spec, _read_failed("file:///srv/tables/user_counts/part-0.parquet")))
    assert "cannot read file /srv/tables/user_counts/part-0.parquet (EOFException" in line
    assert "landing" not in line and "\n" not in line


# A stateful step's Python worker failing while the batch's function counts the batch: the JVM's
# stage failure reaches that function as py4j's error, inside the foreachBatch wrapper's trace.
IN_BATCH_FUNCTION = (
    "[STREAM_FAILED] Query [id = 1f, runId = 2e] terminated with exception: "
    "[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred in the user provided function in "
    "foreach batch sink. Reason: An exception was raised by the Python Proxy. Return Message: "
    "Traceback (most recent call last):\n"
    + '  File "/srv/spark_jobs/io/sinks.py", line 190, in write_batch\n    counts = x\n'
    * 20
    + "py4j.protocol.Py4JJavaError: An error occurred while calling o1044.collectToPython.\n"
    ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 1 in stage 16.0 "
    "failed 1 times, most recent failure: Lost task 1.0 in stage 16.0 (TID 29) (192.0.2.2 "
    "executor driver): org.apache.spark.api.python.PythonException: Traceback (most recent call "
    "last):\n"
    + '  File "/opt/spark/python/pyspark/worker.py", line 1, in main\n    process()\n' * 60
    + "ValueError: state of key 'u7' is not a bucket\n"
    + "\tat org.apache.spark.api.python.BasePythonRunner.handlePythonException(x.scala:1)\n" * 40
    + "\n=== Streaming Query ===\nIdentifier: user_counts [id = 1f, runId = 2e]\n"
)


def test_a_worker_failing_under_the_batch_function_is_named_through_both_wrappers():
    line = str(failure(load_spec("user_counts"), StreamingQueryException(IN_BATCH_FUNCTION)))
    assert "\n" not in line and len(line) <= 300, (len(line), line)
    assert line.startswith(
        "job user_counts failed: [STREAM_FAILED] the query stopped: "
        "[FOREACH_BATCH_USER_FUNCTION_ERROR] in the batch's function: SparkException: "
        "a task failed: org.apache.spark.api.python.PythonException: "
    ), line
    assert line.endswith("ValueError: state of key 'u7' is not a bucket"), line


def test_a_jvm_error_on_the_wrappers_own_line_is_named_with_its_message():
    # Spark 4.2 also puts py4j's line on the wrapper's own line, the JVM error on the next.
    exc = StreamingQueryException(
        message="[STREAM_FAILED] Query [id = 1f, runId = 2e] terminated with exception: "
        "[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred in the user provided function in "
        "foreach batch sink. Reason: py4j.protocol.Py4JJavaError: An error occurred while "
        "calling o470.execute.\n: io.delta.exceptions.ConcurrentDeleteReadException: "
        "[DELTA_CONCURRENT_DELETE_READ] This transaction attempted to read one or more files "
        "that were deleted\n\tat x.y(z:1)\n"
    )
    line = str(failure(load_spec("user_counts"), exc))
    assert line == (
        "job user_counts failed: [STREAM_FAILED] the query stopped: "
        "[FOREACH_BATCH_USER_FUNCTION_ERROR] in the batch's function: "
        "ConcurrentDeleteReadException: [DELTA_CONCURRENT_DELETE_READ] This transaction "
        "attempted to read one or more files that were deleted"
    ), line


def test_a_command_whose_driver_jvm_went_away_says_so_in_one_line(tmp_path, monkeypatch):
    """Any command that runs Spark (``table maintain``, ``quality``, ``publish``): py4j's socket
    errors are the JVM gone, said as such, not a traceback; other errors stay ours."""
    import time

    import pyspark  # noqa: F401 - a command that started Spark has it imported
    from py4j.protocol import Py4JNetworkError

    from spark_jobs.cli import _spark_failure

    monkeypatch.setenv("STATEKEEPER_DATA", str(tmp_path))
    began = time.time() - 5
    for exc in (ConnectionRefusedError(111, "Connection refused"), Py4JNetworkError("empty")):
        line = _spark_failure("table failed: ", exc, began)
        assert line == (
            "table failed: its driver JVM went away mid-run: it was killed (it wrote no crash "
            "report: a kill by hand, or the kernel's short of memory)"
        )
    (tmp_path / "jvm-crashes").mkdir()
    (tmp_path / "jvm-crashes" / "hs_err_pid7.log").write_text("#")
    line = _spark_failure("table failed: ", ConnectionResetError(), began)
    assert line is not None and line.endswith(
        f"(its report: {tmp_path}/jvm-crashes/hs_err_pid7.log)"
    )
    assert _spark_failure("table failed: ", ValueError("ours"), began) is None
