"""Completeness with real Spark and Delta: the sessions job's ledger announces an hour only
once every session ending in it is in the table (the rows of an announced hour never change
afterwards), each hour once, oldest first, and the hours with no session too."""

from __future__ import annotations

import pytest
from jobkit import at, job_spec, write_lines

from spark_jobs.contract import completeness as cp
from spark_jobs.jobs.runner import run_job

pytestmark = pytest.mark.integration


def _click(user: str, minutes: float, n: int) -> dict:
    return {
        "event_id": f"{user}-{n}",
        "user_id": user,
        "event_type": "page_view",
        "page": "/",
        "duration_sec": 1,
        "event_time": at(minutes),
    }


def _per_hour(spark, table: str, keys: list[str]) -> dict[str, list[str]]:
    from pyspark.sql import functions as F

    df = spark.read.format("delta").load(table)
    hour = F.date_format(F.date_trunc("hour", "session_end"), "yyyy-MM-dd'T'HH:mm:ss")
    got = df.select(hour.alias("h"), "session_id").collect()
    return {k: sorted(r.session_id for r in got if r.h == k) for k in keys}


def test_an_hour_is_announced_only_once_every_session_ending_in_it_is_written(spark, tmp_path):
    spec = job_spec("sessions", tmp_path)
    land = tmp_path / "land" / "clickstream"
    files = [
        # minutes after 12:00: a ends 10:05; b ends 11:10 for now; c 11:50 (closes at 12:20)
        [
            _click("a", -120, 1),
            _click("a", -115, 2),
            _click("b", -70, 1),
            _click("b", -50, 2),
            _click("c", -10, 1),
        ],
        # b comes back at 11:35 (its session now ends there); e at 12:25 moves the watermark to 12:15: not yet past 11:50 + the gap
        [_click("b", -25, 3), _click("e", 25, 1)],
        # f at 20:00: every earlier session closes
        [_click("f", 480, 1)],
    ]
    seen: dict[str, list[str]] = {}  # each hour's sessions when it was first announced
    for i, lines in enumerate(files):
        write_lines(land, f"{i}.jsonl", lines)
        run_job(spec, spark=spark)
        new = [k for e in cp.read(spec.checkpoint) for k in e.keys if k not in seen]
        seen.update(_per_hour(spark, spec.output, new))

    entries = cp.read(spec.checkpoint)
    keys = [k for e in entries for k in e.keys]
    hours = [f"2026-03-15T{h:02d}:00:00" for h in range(10, 19)]
    assert keys == hours, "each hour once, in order, empty hours included; 19:00 not yet"
    final = _per_hour(spark, spec.output, keys)
    assert final == seen, "an announced hour's rows never changed afterwards"
    assert final["2026-03-15T10:00:00"] and final["2026-03-15T11:00:00"]
    assert len(final["2026-03-15T11:00:00"]) == 2  # b (ended 11:35) and c (11:50)
    assert [e.seq for e in entries] == list(range(len(entries)))
