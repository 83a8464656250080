"""docs/events.md's SQL answers its questions: each example runs as written with deltalake's
QueryBuilder on an event log of known rows and returns the rows it promises (the same queries
on Spark SQL: tests/integration/test_eventlog_run.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

DOC = Path(__file__).resolve().parents[2] / "docs" / "events.md"
ROWS = [
    {
        "kind": "batch",
        "job": "sessions",
        "batch_id": 7,
        "query_id": "q",
        "at": "2026-11-17T09:10:00Z",
        "input_rows": 100,
        "duration_ms": 12_000,
        "output_version": 42,
        "details": {"sources": [{"files": ["f7"]}]},
    },
    {
        "kind": "batch",
        "job": "sessions",
        "batch_id": 8,
        "query_id": "q",
        "at": "2026-11-17T09:40:00Z",
        "input_rows": 50,
        "duration_ms": 900,
        "output_version": 43,
    },
    {
        "kind": "restore",
        "job": "sessions",
        "at": "2026-11-17T10:00:00Z",
        "who": "cli:ann",
        "args": "python -m spark_jobs checkpoint restore sessions",
        "reason": "ok",
    },
    {
        "kind": "restore",
        "job": "sessions",
        "at": "2026-11-18T10:00:00Z",
        "who": "cli:bob",
        "reason": "ok",
    },
    {
        "kind": "failure",
        "job": "fraud_alerts",
        "at": "2026-11-18T11:00:00Z",
        "reason": "job fraud_alerts failed: boom",
    },
]


def queries() -> list[str]:
    return re.findall(r"```sql\n(.*?)```", DOC.read_text(), re.S)


def expected() -> list[list[tuple]]:
    """What each of the five examples returns on ROWS (its first columns)."""
    return [
        [(7, "q")],
        [("cli:ann",)],
        [("sessions", 7)],
        [("sessions", 150)],
        [("fraud_alerts", None, "job fraud_alerts failed: boom")],
    ]


def first_columns(rows: list[dict], n: int, skip_time: bool = True) -> list[tuple]:
    out = []
    for r in rows:
        vals = [v for k, v in r.items() if not (skip_time and k in ("at", "hour"))]
        out.append(tuple(vals[:n]))
    return out


def test_the_five_examples_answer_their_questions(tmp_path, monkeypatch):
    import pyarrow as pa
    from deltalake import DeltaTable, QueryBuilder

    from spark_jobs.contract.paths import events_table
    from spark_jobs.eventlog import store

    monkeypatch.setenv("STATEKEEPER_DATA", str(tmp_path))
    store.append(ROWS)
    qb = QueryBuilder().register("events", DeltaTable(events_table()))
    sqls = queries()
    assert len(sqls) == 5
    for sql, want in zip(sqls, expected(), strict=True):
        got = pa.table(qb.execute(sql)).to_pylist()  # as the page shows: pa.table(...)
        assert first_columns(got, len(want[0])) == want, sql
