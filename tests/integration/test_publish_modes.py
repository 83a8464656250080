"""Backfill publish, every job x mode, on small hand-made Delta tables (``publish_rows`` with the
session's Spark; the DAG around it is tested in tests/dags/test_dag_runs.py).

- append: new keys are inserted; a known key's totals/counts add up (user_counts,
  windowed_counts), an unmatched order takes the backfill's payment, any other live row stays;
- replace: only the covered entities' live rows in the staged time range are swapped;
- replace on user_counts (lifetime totals) is refused, in the plan step already;
- a published key stays published after Delta's log retention removed its commit file.
"""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from spark_jobs.contract import paths
from spark_jobs.contract.backfill import SCOPE, published
from spark_jobs.contract.errors import UserError
from spark_jobs.io.tables import ddl_fields
from spark_jobs.jobs import definition, definitions
from spark_jobs.publish import publish_rows

pytestmark = pytest.mark.integration

JOBS = sorted(definitions())
T = datetime(2026, 3, 15, 12, 0)  # naive UTC, as Spark returns timestamps


def row(job: str, who: str, minutes: int, n: int, v: int = 0) -> tuple:
    """A row of ``job``'s table for entity ``who`` (its SCOPE column; user_id for user_counts)
    with its time column at ``minutes``. Keys depend on (who, minutes, n); values on ``v``."""
    scope = SCOPE.get(job, "user_id")
    out: list[Any] = []
    for name, kind in ddl_fields(definition(job).schema):
        if name == scope:
            out.append(who)
        elif name == definition(job).time_column:
            out.append(T + timedelta(minutes=minutes))
        elif kind == "timestamp":
            out.append(T + timedelta(minutes=minutes - 1))
        elif kind == "string":
            out.append(f"{who}-{n}")
        elif kind == "bigint":
            out.append(n + 1000 * v)
        elif kind == "boolean":
            out.append(bool(v))
        elif kind.startswith("decimal"):
            out.append(Decimal(n + v))
        else:  # array<string>
            out.append([f"p{v}"])
    return tuple(out)


def table(spark: Any, path: Path, job: str, rows: list[tuple]) -> str:
    spark.createDataFrame(rows, definition(job).schema).write.format("delta").save(str(path))
    return str(path)


def content(spark: Any, uri: str) -> list[tuple]:
    return sorted((tuple(r) for r in spark.read.format("delta").load(uri).collect()), key=repr)


def version(spark: Any, uri: str) -> int:
    from delta.tables import DeltaTable

    return int(DeltaTable.forPath(spark, uri).history(1).first()["version"])


@pytest.mark.parametrize("job", [j for j in JOBS if j in SCOPE])
def test_replace_swaps_only_the_covered_entities_rows_in_the_staged_range(spark, tmp_path, job):
    live = table(
        spark,
        tmp_path / "live",
        job,
        [
            row(job, "A", 10, 1),
            row(job, "A", 20, 2),
            row(job, "A", 100, 3),
            row(job, "B", 20, 4),
        ],
    )
    staged = table(
        spark, tmp_path / "staged", job, [row(job, "A", 10, 1, v=1), row(job, "A", 30, 5)]
    )
    out = publish_rows(spark, job, staged, live, "replace", "k1")
    assert out["published"], out
    assert content(spark, live) == sorted(
        [
            row(job, "A", 10, 1, v=1),  # the backfill's version of a live row
            row(job, "A", 30, 5),  # new
            row(job, "A", 100, 3),  # A, but outside the backfill's time range
            row(job, "B", 20, 4),  # in range, but B is not covered by the backfill
        ],  # A@20 is gone: the backfill holds all of A's events in [10, 30] and did not make it
        key=repr,
    )


@pytest.mark.parametrize("job", JOBS)
def test_append_adds_new_keys_and_combines_known_ones_once(spark, tmp_path, job):
    known_live, known_staged = row(job, "A", 10, 1), row(job, "A", 10, 1, v=1)
    live = table(spark, tmp_path / "live", job, [known_live])
    staged = table(spark, tmp_path / "staged", job, [known_staged, row(job, "C", 200, 2, v=1)])
    assert publish_rows(spark, job, staged, live, "append", "k1")["published"]
    cols = definition(job).columns
    if definition(job).additive:  # backfilled events of a known key add to its totals/counts
        ops = definition(job).additive
        known = tuple(
            (a + b if ops[c] == "sum" else max(a, b)) if c in ops else a
            for c, a, b in zip(cols, known_live, known_staged, strict=True)
        )
    elif job == "order_payments":  # live: unmatched; the backfill found the payment
        known = known_staged
    else:
        known = known_live
    expected = sorted([known, row(job, "C", 200, 2, v=1)], key=repr)
    assert content(spark, live) == expected
    before = version(spark, live)
    again = publish_rows(spark, job, staged, live, "append", "k1")
    assert not again["published"] and "already in version" in again["reason"]
    assert version(spark, live) == before and content(spark, live) == expected


def test_replace_of_lifetime_totals_is_refused_in_plan_and_publish(spark, tmp_path):
    from statekeeper.backfill import BadBackfillParams, plan_backfill

    live = table(spark, tmp_path / "live", "user_counts", [row("user_counts", "A", 10, 1)])
    staged = table(spark, tmp_path / "staged", "user_counts", [row("user_counts", "A", 10, 1, 1)])
    with pytest.raises(UserError, match="lifetime totals"):
        publish_rows(spark, "user_counts", staged, live, "replace", "k1")
    assert content(spark, live) == [row("user_counts", "A", 10, 1)]
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.json").write_text("{}\n")
    with pytest.raises(BadBackfillParams, match="^mode: user_counts holds lifetime totals"):
        plan_backfill(
            {
                "job": "user_counts",
                "mode": "replace",
                "input": str(tmp_path / "in"),
                "output": live,
            },
            tmp_path,
        )


def _expire_log(spark: Any, live: str) -> None:
    """What Delta's log cleanup does after the retention: a checkpoint, then the commit files
    before it deleted."""
    spark.sql(f"ALTER TABLE delta.`{live}` SET TBLPROPERTIES ('delta.checkpointInterval' = '1')")
    spark.createDataFrame(
        [row("sessions", "Z", 900, 9)], definition("sessions").schema
    ).write.format("delta").mode("append").save(live)
    log = Path(live) / "_delta_log"
    last = max(int(p.name.split(".")[0]) for p in log.glob("*.checkpoint.parquet"))
    for p in log.iterdir():
        if p.name.split(".")[0].isdigit() and int(p.name.split(".")[0]) < last:
            p.unlink()


def test_a_published_key_outlives_delta_log_retention(spark, tmp_path):
    job = "sessions"
    live = table(spark, tmp_path / "live", job, [row(job, "A", 10, 1), row(job, "B", 20, 2)])
    staged = table(spark, tmp_path / "staged", job, [row(job, "A", 10, 1, v=1)])
    assert publish_rows(spark, job, staged, live, "replace", "k1")["published"]
    _expire_log(spark, live)
    assert not any("k1" in p.read_text() for p in (Path(live) / "_delta_log").glob("*.json"))
    rows, before = content(spark, live), version(spark, live)
    assert published(live, "k1") is not None  # the ledger under _statekeeper/ says so
    assert not publish_rows(spark, job, staged, live, "replace", "k1")["published"]
    # Without the ledger, Delta's own transaction id (kept in every checkpoint) stops the commit.
    shutil.rmtree(Path(paths.backfill_ledger(live, "k1")).parent)
    publish_rows(spark, job, staged, live, "replace", "k1")
    assert version(spark, live) == before and content(spark, live) == rows


def test_user_counts_backfilled_events_stay_counted_after_later_live_runs(spark, tmp_path):
    from jobkit import job_spec, ts, write_lines
    from test_jobs_hand_checked import click

    from spark_jobs.jobs.runner import run_job

    land = tmp_path / "land" / "clickstream"
    write_lines(land, "a.json", [click("1", "u1", 0), click("2", "u1", 5, "purchase")])
    spec = job_spec("user_counts", tmp_path)
    run_job(spec, spark=spark)
    # A backfill of events the live runs never saw: u1 had 3 more (1 purchase), u2 had 1.
    staged = table(
        spark,
        tmp_path / "staged",
        "user_counts",
        [
            ("u1", 3, 1, ts(-100)),
            ("u2", 1, 0, ts(-90)),
        ],
    )
    assert publish_rows(spark, "user_counts", staged, spec.output, "append", "k1")["published"]
    write_lines(land, "b.json", [click("3", "u1", 9)])
    run_job(spec, spark=spark)  # u1's next live update must not drop the backfilled events
    assert content(spark, spec.output) == [("u1", 6, 2, ts(9)), ("u2", 1, 0, ts(-90))]
