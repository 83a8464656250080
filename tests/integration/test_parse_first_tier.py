"""The parse's first tier (``spark_jobs/io/jvm/statekeeper/ParseLine.java``, Jackson over each
line's bytes) must be sound: a line it lets through as "not suspect" is one the exact tier would
find good. Strict JSON where Spark's ``from_json`` was lenient, the ISO shape of a timestamp
exactly as Spark's RLIKE of :data:`~spark_jobs.io.event_kinds.ISO_TS_WITH_ZONE` says, every
byte checked as UTF-8 as Spark checks it, and a key given twice keeps its last value."""

import json

import pytest

from spark_jobs.io import events as ev
from spark_jobs.io.event_kinds import ISO_TS_WITH_ZONE

pytestmark = pytest.mark.integration

GOOD = {
    "event_id": "e0",
    "user_id": "u1",
    "event_type": "page_view",
    "page": "/a",
    "duration_sec": 3,
    "event_time": "2026-03-15T12:00:00Z",
}
SHAPE = "field event_time must be an ISO-8601 timestamp with a timezone"


def _parse(spark, lines: list[bytes]):
    """(_reason, user_id) per line, in order."""
    from pyspark.sql import functions as F

    df = spark.createDataFrame([(b, i) for i, b in enumerate(lines)], "b binary, i int")
    df = df.select(F.col("b").cast("string").alias("value"), F.lit("f").alias("source_file"), "i")
    rows = ev.parse_lines(df, "clickstream").collect()
    assert len(rows) == len(lines)
    return [(r["_reason"], r["user_id"]) for r in rows]


def _line(**changes) -> str:
    return json.dumps(dict(GOOD, **changes))


def test_what_is_not_strict_json_is_quarantined_with_its_reason(spark):
    good = _line()
    malformed, after = "malformed JSON", "text after the JSON object"
    cases = [
        (malformed, good.replace('"', "'")),  # single quotes: Spark's from_json read them
        (malformed, good[:-1] + ', /* a comment */ "x": 1}'),
        (malformed, good.replace('"/a"', "'/a'")),
        (malformed, good.replace('"duration_sec": 3', '"duration_sec": 03')),
        (malformed, good.replace('{"event_id"', "{event_id")),
        # Spark's parse_json, like from_json, reads the first value and ignores the rest.
        (after, good + " trailing"),
        (after, good + good),  # two events on one line: the second was lost in silence
        (after, good + " 7"),
    ]

    got = _parse(spark, [(good + "  ").encode(), *(text.encode() for _, text in cases)])

    assert got[0] == (None, "u1")
    assert [r for r, _ in got[1:]] == [reason for reason, _ in cases]


def test_the_timestamp_shape_is_exactly_the_expressions(spark):
    from pyspark.sql import functions as F

    stamps = [
        "2026-03-15T12:00:00Z",
        "2026-03-15T12:00:00.5Z",
        "2026-03-15T12:00:00.123456789Z",
        "2026-03-15T12:00:00.1234567890Z",
        "2026-03-15T12:00:00.Z",
        "2026-03-15T12:00:00+01:00",
        "2026-03-15T12:00:00.25-05:30",
        "2026-03-15T12:00:00+0100",
        "2026-03-15T12:00:00+01",
        "2026-03-15T12:00:00+01:0",
        "2026-03-15 12:00:00Z",
        "2026-03-15T12:00Z",
        "2026-03-15T12:00:00",
        "2026-03-15T12:00:00z",
        "2026-03-15T12:00:00Z\n",
        "2026-03-15T12:00:00Z\r\n",
        "2026-03-15T12:00:00Z\u2028",
        " 2026-03-15T12:00:00Z",
        "2026-03-15T12:00:00Z ",
        "\u0662\u0660\u0662\u0666-03-15T12:00:00Z",
        "2026-03-15T12:00:00\uff3a",
        "2026-3-15T12:00:00Z",
        "",
    ]
    shaped = (
        spark.createDataFrame([(s,) for s in stamps], "s string")
        .select(F.col("s").rlike(ISO_TS_WITH_ZONE).alias("ok"))
        .collect()
    )

    got = _parse(spark, [_line(event_time=s).encode() for s in stamps])

    # Both answers occur, so the comparison can fail either way.
    assert {r["ok"] for r in shaped} == {True, False}
    assert [(s, r == SHAPE) for s, (r, _) in zip(stamps, got, strict=True)] == [
        (s, not r["ok"]) for s, r in zip(stamps, shaped, strict=True)
    ]


def test_bytes_that_are_not_utf8_are_quarantined_though_jackson_may_read_them(spark):
    good = _line().encode()
    broken = [
        good.replace(b"u1", b"u\xc0\xaf"),  # an overlong "/"
        good.replace(b"u1", b"u\xed\xa0\x80"),  # a UTF-16 surrogate
        good.replace(b"u1", b"u\xff"),
        good.replace(b"u1", b"u\xe2\x82"),  # cut short
    ]

    got = _parse(spark, [good.replace(b"u1", "u\u00e9\u20ac".encode()), *broken])

    assert got[0] == (None, "u\u00e9\u20ac")
    assert [r for r, _ in got[1:]] == ["line is not valid UTF-8"] * len(broken)


def test_a_key_given_twice_keeps_its_last_value(spark):
    good = _line()
    last_good = good[:-1] + ', "user_id": "u2"}'
    first_good = good.replace('"user_id": "u1"', '"user_id": "u0"')[:-1] + ', "user_id": 5}'
    # Wrong elsewhere too: the reason is that fault, not "malformed JSON" for the repeated key.
    missing = (
        json.dumps({k: v for k, v in GOOD.items() if k != "event_id"})[:-1] + ', "page": "/b"}'
    )

    got = _parse(spark, [last_good.encode(), first_good.encode(), missing.encode()])

    assert got[0] == (None, "u2")
    assert got[1][0] == "field user_id must be a string, got bigint"
    assert got[2][0] == "missing field event_id"
