"""Bad input is quarantined with its reason, never fatal (impossible and far-future instants,
huge and non-UTF-8 lines included); every job's tables are written with microsecond timestamps
and read by another Delta reader (delta-rs); one batch writer splits output, quarantine and
key-metric rows, once per batch id."""

import json

import pytest
from jobkit import at, job_spec, parquet_timestamp_types, write_lines

from spark_jobs.generate import generate
from spark_jobs.io import delta_txns, event_kinds, key_metrics, sinks
from spark_jobs.io import events as ev
from spark_jobs.jobs.runner import run_job
from spark_jobs.runtime import progress

pytestmark = pytest.mark.integration

GOOD = {
    "event_id": "e0",
    "user_id": "u1",
    "event_type": "page_view",
    "page": "/a",
    "duration_sec": 3,
    "event_time": at(0),
}


DURATION = '"duration_sec": 3'


def line(**changes):
    event = dict(GOOD, **changes)
    return json.dumps({k: v for k, v in event.items() if v is not ...})


def test_hostile_lines_are_quarantined_each_with_its_reason(spark, tmp_path):
    folder = tmp_path / "land" / "clickstream"
    not_int = "field duration_sec must be an integer, got "
    too_big = "field duration_sec does not fit a 32-bit integer (-2147483648..2147483647)"
    cases = [
        ("good", line()),
        ("field user_id must be a string, got bigint", line(event_id="e1", user_id=123)),
        ("missing field event_id", line(event_id=...)),
        (
            "field event_time must be an ISO-8601 timestamp with a timezone",
            line(event_id="e2", event_time="2026-03-15 12:00:00"),
        ),
        ("malformed JSON", '{"event_id": "e3", "user_'),
        (
            "field event_time is not a real instant",
            line(event_id="e4", event_time="2026-02-30T12:00:00Z"),
        ),
        (
            "field event_time is more than 24 hours ahead of the clock",
            line(event_id="e5", event_time="9999-12-31T00:00:00Z"),
        ),
        ("a string that looks like a number is still a string", line(event_id="e6", user_id="42")),
        # Spark's parser makes the text "Infinity" (quotes included) of an overflowing number.
        ("field page must be a string, got double", line(event_id="e8").replace('"/a"', "1e400")),
        (
            "strings shaped like an IP address or a date are strings",
            line(event_id="e9", user_id="10.1.2.3", page="2026-01-02"),
        ),
        # Numbers of the right JSON type that their column cannot hold: never fatal.
        (not_int + "double", line(event_id="n1").replace(DURATION, '"duration_sec": 1e20')),
        (not_int + "double", line(event_id="n2").replace(DURATION, '"duration_sec": -1e20')),
        (not_int + "double", line(event_id="n3").replace(DURATION, '"duration_sec": 1e400')),
        (too_big, line(event_id="n4", duration_sec=9223372036854775808)),
        (too_big, line(event_id="n5", duration_sec=2**40)),
        (too_big, line(event_id="n6", duration_sec=-(2**31) - 1)),
        (not_int + "string", line(event_id="n7", duration_sec="NaN")),
        ("malformed JSON", line(event_id="n8").replace(DURATION, '"duration_sec": NaN')),
        ("the largest duration is good", line(event_id="n9", duration_sec=2**31 - 1)),
    ]
    good = {
        "good",
        "a string that looks like a number is still a string",
        "strings shaped like an IP address or a date are strings",
        "the largest duration is good",
    }
    write_lines(folder, "a.json", [text for _, text in cases])
    # A 50 MB line and a line with a byte that is not UTF-8, in files of their own.
    (folder / "b.json").write_bytes(b'{"event_id": "' + b"x" * 50_000_000 + b'"}\n')
    (folder / "c.json").write_bytes(line(event_id="e7").encode().replace(b"u1", b"u\xff") + b"\n")

    summary = run_job(job_spec("dedup_events", tmp_path), spark=spark)

    quarantined = spark.read.format("delta").load(str(tmp_path / "out" / "_quarantine")).collect()
    wanted = [reason for reason, _ in cases if reason not in good] + [
        "line longer than 1048576 bytes (first 4096 characters kept)",
        "line is not valid UTF-8",
    ]
    assert sorted(r["reason"] for r in quarantined) == sorted(wanted)
    assert summary.quarantined == len(wanted)
    q = {r["reason"]: r for r in quarantined}
    assert len(q["line longer than 1048576 bytes (first 4096 characters kept)"]["raw_line"]) == 4096
    out = spark.read.format("delta").load(str(tmp_path / "out"))
    assert sorted(r["user_id"] for r in out.collect()) == ["10.1.2.3", "42", "u1", "u1"]
    assert max(r["duration_sec"] for r in out.collect()) == 2**31 - 1
    # The year-9999 line never reached the table: another reader reads all of it.
    from deltalake import DeltaTable

    assert DeltaTable(str(tmp_path / "out")).to_pyarrow_table().num_rows == 4


def test_amounts_that_do_not_fit_their_decimal_are_quarantined_not_fatal(spark, tmp_path):
    """The hostile numbers of orders and payments: ``amount`` is a decimal(18,2), and a cast
    that does not fit once threw in every batch (ANSI mode), so the file had to be edited by hand
    (on Kafka, a poison pill for ever)."""
    no_fit = "field amount does not fit decimal(18,2)"
    order = {"order_id": "o1", "user_id": "u1", "amount": 12.345, "event_time": at(0)}
    payment = {"payment_id": "p1", "order_id": "o1", "amount": 12.35, "event_time": at(1)}

    def with_amount(event: dict, n: int, amount: str) -> str:
        key = next(k for k in event if k.endswith("_id"))
        return json.dumps(dict(event, **{key: f"{event[key]}-{n}", "amount": 0})).replace(
            '"amount": 0', f'"amount": {amount}'
        )

    orders = [
        (no_fit, "1e20"),
        (no_fit, "-1e20"),
        (no_fit, "1e400"),
        (no_fit, "9223372036854775808"),
        (no_fit, "1e16"),
        ("field amount must be a number, got string", '"NaN"'),
        ("field amount must be a number, got string", '"Infinity"'),
        ("malformed JSON", "NaN"),
    ]
    write_lines(
        tmp_path / "land" / "orders",
        "a.json",
        [json.dumps(order)] + [with_amount(order, i, a) for i, (_, a) in enumerate(orders)],
    )
    write_lines(
        tmp_path / "land" / "payments",
        "a.json",
        [json.dumps(payment), with_amount(payment, 0, "-1e20")],
    )

    summary = run_job(job_spec("order_payments", tmp_path), spark=spark)

    quarantined = spark.read.format("delta").load(str(tmp_path / "out" / "_quarantine")).collect()
    assert sorted(r["reason"] for r in quarantined) == sorted([r for r, _ in orders] + [no_fit])
    assert summary.quarantined == len(orders) + 1
    from decimal import Decimal

    [row] = spark.read.format("delta").load(str(tmp_path / "out")).collect()
    assert (row["order_id"], row["payment_id"], row["amount"]) == ("o1", "p1", Decimal("12.35"))


# The JVM does not compile a method over 8,000 bytes of bytecode: it interprets it, for every
# line. The parse's VARIANT checks once made such a method (parsing 5-10x slower).
JIT_LIMIT = 8000


@pytest.mark.parametrize("kind", sorted(event_kinds.KINDS))
def test_the_parse_compiles_to_methods_the_jvm_can_compile(spark, tmp_path, kind):
    import re

    from pyspark.sql import functions as F

    write_lines(tmp_path, "a.json", [line()])
    lines = spark.read.text(str(tmp_path)).select(
        "value", F.col("_metadata.file_path").alias("source_file")
    )
    parsed = ev.parse_lines(lines, kind)
    for df in (ev.good_events(parsed, kind), ev.bad_records(parsed, "job", kind)):
        plan = spark._jvm.PythonSQLUtils.explainString(df._jdf.queryExecution(), "codegen")
        sizes = [int(n) for n in re.findall(r"maxMethodCodeSize:(\d+)", plan)]
        assert sizes and max(sizes) < JIT_LIMIT, sizes


KIND_KEYS = {"auth": 3, "service-logs": 3}


# Every job's tables are read by delta-rs in the invariance harness; here the two-input job,
# with its input line count.
@pytest.mark.parametrize("job", ["order_payments"])
def test_every_jobs_tables_are_read_by_delta_rs(spark, tmp_path, job):
    from deltalake import DeltaTable

    spec = job_spec(job, tmp_path)
    lines = 0
    for kind, folder in spec.inputs.items():
        made = generate(kind, folder, 120, keys=KIND_KEYS.get(kind, 10), seed=4, bad_rate=0.05)
        lines += made.events + made.bad
    summary = run_job(spec, spark=spark)
    for table in (tmp_path / "out", tmp_path / "out" / "_quarantine"):
        expected = spark.read.format("delta").load(str(table)).count()
        assert parquet_timestamp_types(table) == {"INT64"}, table
        assert DeltaTable(str(table)).to_pyarrow_table().num_rows == expected
    assert summary.quarantined > 0
    assert summary.input_rows == lines  # each line counted once


def test_each_source_is_scanned_and_parsed_once_per_batch(spark, tmp_path):
    """The job and the bad records read one shuffle of each input's parsed lines (Spark's
    ReuseExchange), not each input twice; checked in a micro-batch's physical plan."""
    from spark_jobs.jobs.runner import build_stream

    spec = job_spec("order_payments", tmp_path)
    for kind, folder in spec.inputs.items():
        generate(kind, folder, 40, keys=10, seed=4, bad_rate=0.1)
    plans = []

    def first_batch(batch, batch_id):
        batch.count()
        if batch_id == 0:
            (q,) = [q for q in spark.streams.active if q.name == "plan_probe"]
            plans.append(q._jsq.explainInternal(False))

    q = (
        build_stream(spark, spec)
        .writeStream.queryName("plan_probe")
        .option("checkpointLocation", str(tmp_path / "probe"))
        .trigger(availableNow=True)
        .foreachBatch(first_batch)
        .start()
    )
    q.awaitTermination()
    assert plans[0].count("FileScan text") == len(spec.kinds), plans[0]
    assert plans[0].count("ReusedExchange") == len(spec.kinds), plans[0]


def test_batch_writer_splits_rows_and_hands_key_metrics_to_the_progress_log(spark, tmp_path):
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "metadata").write_text(json.dumps({"id": "0f6c1a9e-query"}) + "\n")
    batch = spark.createDataFrame(
        [
            ("u1", 3, None, None),
            ("u2", 5, None, None),
            (None, None, ("bad line", "malformed JSON"), None),
            (None, None, None, (10, 2, 1, 0)),  # (held, updated, removed, expired)
            (None, None, None, (7, 1, 0, 1)),
        ],
        f"user_id string, n bigint, {sinks.QUARANTINE_COL} struct<raw_line:string,reason:string>, "
        f"{sinks.KEYS_COL} {key_metrics.DDL}",
    )
    out, quarantine = str(tmp_path / "out"), str(tmp_path / "q")
    write = sinks.make_batch_writer(out, quarantine, str(ckpt), "job", ["user_id", "n"])
    write(batch, 0)
    write(batch, 0)  # a replayed batch: both tables already have it
    got = sorted(tuple(r) for r in spark.read.format("delta").load(out).collect())
    assert got == [("u1", 3), ("u2", 5)]
    assert [tuple(r) for r in spark.read.format("delta").load(quarantine).collect()] == [
        ("bad line", "malformed JSON")
    ]
    assert progress.pop_keys("job", 0) == {
        "total": 17,
        "updated": 3,
        "removed": 1,
        "expired": 1,
        "emitted": 2,
    }


BATCH_SCHEMA = (
    f"user_id string, n bigint, {sinks.QUARANTINE_COL} struct<raw_line:string,reason:string>, "
    f"{sinks.KEYS_COL} {key_metrics.DDL}"
)


def _batch_writer(tmp_path, query_id):
    """A batch writer of ``user_id, n`` rows to ``out`` and ``q`` under ``tmp_path``, its
    checkpoint naming ``query_id``; (writer, output table, quarantine table)."""
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "metadata").write_text(json.dumps({"id": query_id}) + "\n")
    out, quarantine = str(tmp_path / "out"), str(tmp_path / "q")
    write = sinks.make_batch_writer(out, quarantine, str(ckpt), "job", ["user_id", "n"])
    return write, out, quarantine


def test_no_rebuild_after_a_write_of_no_rows(spark, tmp_path):
    """A clean batch creates the quarantine table empty and starts no rebuild of its check (the
    next batch is no likelier to write it); the output, written with rows, gets its rebuild."""
    write, out, quarantine = _batch_writer(tmp_path, "6c1f8e3d-query")
    write(spark.createDataFrame([("u1", 1, None, None)], BATCH_SCHEMA), 0)
    assert (tmp_path / "q" / "_delta_log").is_dir()  # both tables exist after a first batch
    assert quarantine not in delta_txns._running
    rebuild = delta_txns._running[out]
    rebuild.join()


def test_batch_writer_rebuilds_the_exactly_once_check_off_the_write(spark, tmp_path):
    """After a batch's writes, the next batch's writes find Delta's txn check of both tables
    already rebuilt: its jobs are the count and one file write per table (Delta's snapshot
    rebuild would be one more job per table, and so would the shuffle of an optimized write: the
    writer sizes the files from its count instead, one file for a small batch of several
    partitions); a replayed batch is still skipped by both tables."""
    write, out, quarantine = _batch_writer(tmp_path, "5b0e7d2c-query")
    write(
        spark.createDataFrame(
            [("u1", 1, None, None), (None, None, ("x", "bad"), None)], BATCH_SCHEMA
        ),
        0,
    )
    for table in (out, quarantine):  # the rebuilds started after batch 0's writes
        if (rebuild := delta_txns._running.get(table)) is not None:
            rebuild.join()
    sc = spark.sparkContext
    sc.setJobGroup("batch-1", "batch 1")
    rows = [("u2", 2, None, None), ("u3", 3, None, None), ("u4", 4, None, None)]
    rows += [(None, None, ("y", "bad"), None)]
    try:
        write(spark.createDataFrame(rows, BATCH_SCHEMA).repartition(3), 1)
        from deltalake import DeltaTable

        table = DeltaTable(out)
        assert table.metadata().configuration["delta.autoOptimize.optimizeWrite"] == "true"
        # the count, the output's write, the quarantine's write (side by side, same group)
        assert len(sc.statusTracker().getJobIdsForGroup("batch-1")) == 3
        assert len(table.file_uris()) == 2  # batch 0's file and batch 1's one
        write(spark.createDataFrame(rows, BATCH_SCHEMA), 1)  # replayed
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    got = sorted(tuple(r) for r in spark.read.format("delta").load(out).collect())
    assert got == [("u1", 1), ("u2", 2), ("u3", 3), ("u4", 4)]
    bad = sorted(r.raw_line for r in spark.read.format("delta").load(quarantine).collect())
    assert bad == ["x", "y"]


def test_an_event_no_later_than_one_already_admitted_is_not_in_the_future(spark, tmp_path):
    """``max_future`` follows the batch's clock but is bounded by event time already admitted:
    once the job admitted an event (here under a wider ``max_future``, as a driver whose clock
    ran ahead would), a later one up to that time is not quarantined as "in the future"."""
    from dataclasses import replace
    from datetime import UTC, datetime, timedelta

    def ahead(hours: float) -> str:
        t = datetime.now(UTC) + timedelta(hours=hours)
        return t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"

    folder = tmp_path / "land" / "clickstream"
    spec = job_spec("dedup_events", tmp_path)
    write_lines(folder, "a.json", [line(event_id="far", event_time=ahead(120))])
    assert run_job(replace(spec, max_future_seconds=10 * 86400), spark=spark).quarantined == 0

    # The watermark now stands an hour (the delay) before that event; one day of max_future.
    write_lines(
        folder,
        "b.json",
        [
            line(event_id="admitted", event_time=ahead(120 - 0.5)),
            line(event_id="beyond", event_time=ahead(144)),
        ],
    )
    second = run_job(spec, spark=spark)

    out = spark.read.format("delta").load(str(tmp_path / "out"))
    assert sorted(r["event_id"] for r in out.collect()) == ["admitted", "far"]
    [q] = spark.read.format("delta").load(str(tmp_path / "out" / "_quarantine")).collect()
    assert q["reason"] == "field event_time is more than 24 hours ahead of the clock"
    assert '"beyond"' in q["raw_line"] and second.quarantined == 1
