"""The parse's "certainly good" rule for string fields: one regex over the string fields joined
by a control character (:func:`spark_jobs.io.events._may_not_be_string`). Any text Spark's
parser makes of a non-string JSON value, in any string field (first, middle or last, next to a
null one), must still reach the exact check and be quarantined with its reason."""

import json

import pytest

from spark_jobs.io import events as ev

pytestmark = pytest.mark.integration

GOOD = {
    "event_id": "e0",
    "user_id": "u1",
    "event_type": "page_view",
    "page": None,
    "duration_sec": 3,
    "event_time": "2026-03-15T12:00:00Z",
}
# JSON values that are not strings (numbers as written and as Java prints them, overflowing).
NOT_STRINGS = ["7", "-12", "1.5e3", "1E+10", "true", "false", '{"a": "x"}', "[1, 2]", "1e400"]


def _line(field: str, raw: str) -> str:
    return json.dumps(dict(GOOD, **{field: "__X__"})).replace('"__X__"', raw)


def test_a_non_string_in_any_string_field_is_quarantined_with_its_reason(spark):
    from pyspark.sql import functions as F

    cases = [
        (_line(f, raw), f"field {f} must be a string, got ")
        for f in ("event_id", "user_id", "event_type", "page")
        for raw in NOT_STRINGS
    ]
    # Real strings of those shapes, and one holding the separator itself, are good.
    good = [
        _line("user_id", json.dumps(s))
        for s in ("42", "true", "{x", "a\u0001b", "\u00017", "10.1.2.3", "1e5x")
    ]
    lines = spark.createDataFrame(
        [(text,) for text, _ in cases] + [(text,) for text in good], "value string"
    ).select("value", F.lit("f").alias("source_file"))

    got = ev.parse_lines(lines, "clickstream").select("_reason").collect()

    reasons = [r["_reason"] for r in got]
    wrong = [
        (text, r)
        for (text, want), r in zip(cases, reasons[: len(cases)], strict=True)
        if not (r or "").startswith(want)
    ]
    assert not wrong
    assert reasons[len(cases) :] == [None] * len(good)
