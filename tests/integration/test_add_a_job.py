"""Adding a job takes three files: its module (the declaration and the logic), its spec and its
quality suite. Here all three are written into the test's folders, outside the project, and the
job runs through the normal runner into Delta; its suite's schema and key checks come from the
declaration. Nothing else in the project is edited or told about the job."""

from __future__ import annotations

import textwrap

import pytest
from jobkit import at, rows, ts, write_lines

from spark_jobs.contract.spec import load_spec
from spark_jobs.jobs import EXTRA_MODULES_ENV, definition
from spark_jobs.jobs.runner import run_job
from spark_jobs.quality.suites import load_suite

pytestmark = pytest.mark.integration

MODULE = '''
"""``big_purchases``: the clickstream's purchases of at least ``min_duration`` seconds."""

from typing import Any

from spark_jobs.jobs.declaration import JobDef, JobParams


class Params(JobParams):
    min_duration: int = 30


def build(spark: Any, spec: Any, events: dict[str, Any]) -> Any:
    from pyspark.sql import functions as F

    p = Params.of(spec)
    return (
        events["clickstream"]
        .where((F.col("event_type") == "purchase") & (F.col("duration_sec") >= p.min_duration))
        .select("event_id", "user_id", "duration_sec", "event_time")
    )


JOB = JobDef(
    name="big_purchases",
    inputs=("clickstream",),
    schema="event_id string, user_id string, duration_sec bigint, event_time timestamp",
    keys=("event_id",),
    time_column="event_time",
    build=build,
    params=Params,
)
'''

SPEC = """
name: big_purchases
pattern: builtin
inputs:
  clickstream: {land}
output: {out}
checkpoint: {ckpt}
watermark: 10 minutes
shuffle_partitions: 2
params:
  min_duration: 20
quality:
  freshness_sla: 2 hours
  max_quarantine_rate: 0.05
"""

SUITE = """
table: big_purchases
checks:
  - check: schema
    severity: fail
  - check: keys
    severity: fail
"""


def click(eid: str, user: str, minute: float, etype: str, dur: int | None) -> dict:
    return {
        "event_id": eid,
        "user_id": user,
        "event_type": etype,
        "page": "/p",
        "duration_sec": dur,
        "event_time": at(minute),
    }


def test_a_new_job_in_three_files_runs_through_the_runner(spark, tmp_path, monkeypatch):
    code, specs, suites = tmp_path / "code", tmp_path / "specs", tmp_path / "expectations"
    for folder in (code, specs, suites):
        folder.mkdir()
    land, out, ckpt = tmp_path / "land", tmp_path / "out", tmp_path / "ckpt"
    written = [
        code / "big_purchases_job.py",
        specs / "big_purchases.yaml",
        suites / "big_purchases.yaml",
    ]
    written[0].write_text(textwrap.dedent(MODULE))
    written[1].write_text(SPEC.format(land=land, out=out, ckpt=ckpt))
    written[2].write_text(SUITE)
    monkeypatch.syspath_prepend(str(code))
    monkeypatch.setenv(EXTRA_MODULES_ENV, "big_purchases_job")
    monkeypatch.setenv("STATEKEEPER_SPECS", str(specs))

    write_lines(
        land,
        "a.json",
        [
            click("p1", "u1", 0, "purchase", 45),
            click("p2", "u2", 1, "purchase", 5),  # too short for the spec's 20 seconds
            click("v1", "u1", 2, "page_view", 90),  # not a purchase
            click("p3", "u3", 3, "purchase", 20),
            "not json",  # quarantined, as for any job
        ],
    )
    spec = load_spec("big_purchases")
    summary = run_job(spec, spark=spark)

    assert rows(spark, str(out), ["event_id"]) == [
        ("p1", "u1", 45, ts(0)),
        ("p3", "u3", 20, ts(3)),
    ]
    assert summary.rows_written == 2 and summary.quarantined == 1
    suite = load_suite(spec, folder=suites)
    schema = next(c for c in suite.checks if c.label == "schema: columns")
    assert schema.kwargs["column_list"] == definition("big_purchases").columns
    assert [c.label for c in suite.checks if c.macro == "keys"] == [
        "keys: event_id not null",
        "keys: event_id unique",
    ]
    assert len(written) <= 3
