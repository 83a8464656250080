"""The parse's generated code stays the same from batch to batch (:mod:`spark_jobs.io.batch_clock`).

Spark writes a batch's clock into its generated code as a constant, so a stage that reads it is
compiled again in every batch. The parse's stage is the biggest (over 100 KB of Java source);
it must not read the clock, and the stage after the shuffle, where bad lines become quarantine
rows, must not either. Two batches of one query, planned as the runner plans them, are
compared."""

import json
import re

import pytest

from spark_jobs.io import events as ev
from spark_jobs.io import sinks, watermarks

pytestmark = pytest.mark.integration

EVENT = {
    "event_id": "e0",
    "user_id": "u1",
    "event_type": "page_view",
    "event_time": "2026-03-15T12:00:00Z",
}
# The clock's own stage is about 11 KB of Java source; the parse's, about 110 KB.
SMALL = 20_000


def _stages(spark, query) -> tuple[list[str], str]:
    """The last batch's whole-stage-generated code, a stage's in plan order, and its clock as
    the constant Spark writes (epoch microseconds)."""
    execution = query._jsq.streamingQuery().lastExecution()
    text = spark._jvm.PythonSQLUtils.explainString(execution, "codegen")
    clock = f"{execution.offsetSeqMetadata().batchTimestampMs() * 1000}L"
    return [
        p.partition("Generated code:")[2] for p in re.split(r"\n(?=== Subtree)", text)[1:]
    ], clock


def test_only_a_small_stage_reads_the_batch_clock(spark, tmp_path):
    from pyspark.sql import functions as F

    land = tmp_path / "land"
    land.mkdir()
    lines = spark.readStream.text(str(land)).select(
        "value", F.col("_metadata.file_path").alias("source_file")
    )
    parsed = watermarks.before_shuffle(ev.parse_lines(lines, "clickstream"), "event_time", 60)
    parsed = ev.shared(parsed, 2, [F.col("user_id")])
    rows = sinks.combine(
        ev.good_events(parsed, "clickstream"), ev.bad_records(parsed, "job", "clickstream")
    )
    batches = []
    for n in range(2):
        # one good line and one a day and more ahead of the clock: both checks run
        (land / f"{n}.json").write_text(
            json.dumps(dict(EVENT, event_id=f"e{n}"))
            + "\n"
            + json.dumps(dict(EVENT, event_id=f"f{n}", event_time="2999-01-01T00:00:00Z"))
            + "\n"
        )
        got: list = []
        query = (
            rows.writeStream.foreachBatch(lambda df, _, got=got: got.extend(df.collect()))
            .option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        assert sorted(r["event_id"] or r[sinks.QUARANTINE_COL]["reason"] for r in got) == [
            f"e{n}",
            "field event_time is more than 24 hours ahead of the clock",
        ]
        batches.append(_stages(spark, query))

    (first, clock1), (second, clock2) = batches
    assert clock1 != clock2
    assert len(first) == len(second)
    readers = [code for code in second if clock2 in code]
    # One stage reads the clock (the future check above needs it): the clock's own, small.
    assert [len(code) < SMALL for code in readers] == [True], [len(code) for code in readers]
    parse = max(range(len(second)), key=lambda i: len(second[i]))
    assert len(second[parse]) > 5 * SMALL
    assert first[parse] == second[parse]


def test_the_parse_keeps_the_text_of_a_line_any_batch_may_find_ahead(spark):
    """A batch run again keeps the clock it was planned with, so its limit can be days behind
    now: a line the parse lets through without its text must be behind every batch's limit."""
    import time
    from datetime import UTC, datetime

    from spark_jobs.io import batch_clock

    day = 86_400_000
    now = int(time.time() * 1000)
    times = [now - 3 * day, now - day, now + 2 * day]
    df = spark.createDataFrame(
        [(datetime.fromtimestamp(t / 1000, UTC),) for t in times], "event_time timestamp"
    )

    def ahead(**marks):
        cond = batch_clock.may_be_ahead("clickstream", 86_400, **marks).alias("a")
        return [r["a"] for r in df.select(cond).collect()]

    assert ahead(admitted_ms=None) == [False, False, True]  # only now's own batches
    # a batch planned three days ago may find the line of yesterday ahead
    assert ahead(admitted_ms=None, clock_floor_ms=now - 3 * day) == [False, True, True]
    # ... unless the job has admitted events that late already
    assert ahead(admitted_ms=now, clock_floor_ms=now - 3 * day) == [False, False, True]
