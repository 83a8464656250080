"""The one-frame output of a bucket call (``pandas_io.with_metric_row``) against the frames it
replaces (``rows_frame`` + ``key_metrics.with_null_metrics``, then ``key_metrics.frame``): the
same rows, and the same Arrow batch once PySpark's own conversion for the operator's output
schema has turned them into Arrow."""

from __future__ import annotations

import pandas as pd
import pytest

from spark_jobs.io import key_metrics
from spark_jobs.jobs import pandas_io, sessions

pytestmark = pytest.mark.unit

COLUMNS = sessions.JOB.columns
ROWS = {
    "user_id": ["u1", "u2"],
    "session_id": ["a" * 20, "b" * 20],
    "session_start": [1_700_000_000_123, 1_700_000_100_000],
    "session_end": [1_700_000_050_999, 1_700_000_100_000],
    "events": [3, 1],
    "page_views": [2, 0],
    "total_duration_sec": [2**53 + 1, 0],  # beyond what a float keeps exactly
    "last_pages": [["/a", "/b"], []],
    "purchased": [True, False],
    "checkout_viewed": [False, False],
}


def _schema():
    """The operator's output schema (the sessions columns and the metric column), without a JVM."""
    from pyspark.sql import types as T

    simple = {
        "string": T.StringType(),
        "timestamp": T.TimestampType(),
        "bigint": T.LongType(),
        "boolean": T.BooleanType(),
        "array<string>": T.ArrayType(T.StringType()),
    }
    fields = [
        T.StructField(name, simple[kind])
        for name, kind in (c.split(" ", 1) for c in sessions.SCHEMA.split(", "))
    ]
    metric = T.StructType([T.StructField(f, T.LongType()) for f in key_metrics.FIELDS])
    return T.StructType([*fields, T.StructField(key_metrics.COLUMN, metric)])


def _arrow(frame: pd.DataFrame) -> list[dict]:
    """``frame``'s rows as PySpark's pandas-to-Arrow conversion hands them to Spark."""
    from pyspark.sql.conversion import PandasToArrowConversion
    from pyspark.sql.types import StructField, StructType

    batch = PandasToArrowConversion.convert(
        [frame],
        StructType([StructField("_1", _schema())]),
        timezone="UTC",
        safecheck=True,
        arrow_cast=True,
        assign_cols_by_name=True,
    )
    return [r["_1"] for r in batch.to_pylist()]


def _before(rows, metric: dict[str, int]) -> list[dict]:
    """The rows of the frames a call yielded before: output rows, then a metric frame."""
    out = []
    if rows:
        frame = pandas_io.rows_frame(rows, COLUMNS, sessions.TS_COLUMNS)
        out += _arrow(key_metrics.with_null_metrics(frame))
    return out + _arrow(key_metrics.frame(COLUMNS, **metric))


@pytest.mark.parametrize("rows", [ROWS, None], ids=["rows", "metric-only"])
def test_one_frame_holds_the_rows_and_the_metric_row_as_before(rows):
    metric = {"held": 2, "updated": 1, "removed": 0, "expired": 3}
    got = pandas_io.with_metric_row(
        rows, COLUMNS, sessions.TS_COLUMNS, key_metrics.COLUMN, key_metrics.counts(**metric)
    )
    assert list(got.columns) == [*COLUMNS, key_metrics.COLUMN]
    assert len(got) == (len(rows["user_id"]) if rows else 0) + 1
    assert _arrow(got) == _before(rows, metric)
    last = _arrow(got)[-1]
    assert last[key_metrics.COLUMN] == metric
    assert all(last[c] is None for c in COLUMNS)
