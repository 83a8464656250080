"""Completeness events through real Airflow (SQLite, ``dag.test()``, the scheduler's own step
that turns partitioned asset events into DAG runs): the catch-up DAG emits one event per hour
its run completed, oldest first, and nothing again on a re-run; ``hourly_sessions_report`` runs
once per complete hour, never for an incomplete one, and again after a backfill re-completes
an hour (its report row replaced). The job's run is marked done: the sessions table and its
ledger are written here, as a run would leave them (the Spark side is tested in
tests/integration/test_completeness_spark.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from airflow_env import ROOT, airflow_env, migrate

pytestmark = pytest.mark.dags

ASSET = "statekeeper.sessions.complete"
CONSUMER = "hourly_sessions_report"
RUN_MARKED = "validate_checkpoint|catch_up|quality_check|publish_asset"
BACKFILL_MARKED = "plan|run_staged|validate_staged|publish"


def _ts(hhmm: str) -> datetime:
    h, m = hhmm.split(":")
    return datetime(2026, 3, 15, int(h), int(m), tzinfo=UTC)


def _write_sessions(table: Path, ends: list[tuple[str, str]]) -> None:
    """Sessions rows (user, session_end) as the job writes them (deltalake, no Spark)."""
    import pyarrow as pa
    from deltalake import write_deltalake

    ts = pa.timestamp("us", tz="UTC")
    rows = [
        {
            "user_id": u,
            "session_id": f"{u}-{end}",
            "session_start": _ts(end),
            "session_end": _ts(end),
            "events": 2,
            "page_views": 1,
            "total_duration_sec": 5,
            "last_pages": ["/"],
            "purchased": False,
            "checkout_viewed": False,
        }
        for u, end in ends
    ]
    schema = pa.schema(
        [
            ("user_id", pa.string()),
            ("session_id", pa.string()),
            ("session_start", ts),
            ("session_end", ts),
            ("events", pa.int64()),
            ("page_views", pa.int64()),
            ("total_duration_sec", pa.int64()),
            ("last_pages", pa.list_(pa.string())),
            ("purchased", pa.bool_()),
            ("checkout_viewed", pa.bool_()),
        ]
    )
    write_deltalake(str(table), pa.Table.from_pylist(rows, schema=schema), mode="append")


def _batch(spec, batch: int, watermark: str, oldest: str | None = None) -> None:
    """What the job's listener does after a committed batch: the ledger, then the progress."""
    from spark_jobs import completeness
    from spark_jobs.runtime import progress

    et = {"watermark": f"2026-03-15T{watermark}:00.000Z" if watermark else "1970-01-01T00:00:00Z"}
    if oldest:
        et["min"] = f"2026-03-15T{oldest}:00.000Z"
    record = {"batchId": batch, "eventTime": et}
    completeness.record_batch(spec, 1800.0, record)
    progress.append_line(progress.progress_path(spec.checkpoint), record)


def _phase(home: Path, data: Path, runs: list[dict], log: Path) -> dict:
    job = {"runs": runs, "consumer": CONSUMER, "asset": ASSET}
    with open(log, "a") as fh:
        proc = subprocess.run(
            [sys.executable, str(Path(__file__).with_name("partitioned_main.py"))],
            input=json.dumps(job),
            stdout=fh,
            # paused (the default for a new DAG), the consumer would queue no runs
            env=airflow_env(home, data, AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION="False"),
            stderr=subprocess.STDOUT,
            text=True,
            timeout=600,
            cwd=str(ROOT),
        )
    lines = [ln for ln in log.read_text().splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, "\n".join(log.read_text().splitlines()[-60:])
    return json.loads(lines[-1][len("RESULT ") :])


def _report(data: Path) -> dict[str, int]:
    from deltalake import DeltaTable

    df = DeltaTable(str(data / "tables" / "reports" / "hourly_sessions")).to_pandas()
    assert df["hour"].is_unique, "one row per hour"
    return dict(zip(df["hour"], df["sessions"].astype(int), strict=True))


@pytest.fixture
def own_airflow_home(tmp_path) -> Path:
    """A metadata DB of its own: the session's shared one holds other tests' runs of
    catchup_sessions and backfill, and the asset events and runs counted here must be this
    test's alone."""
    home = tmp_path / "airflow_home"
    home.mkdir()
    migrate(home)
    return home


def test_one_run_per_complete_hour_in_order_and_again_after_a_recompletion(
    own_airflow_home, tmp_path, monkeypatch
):
    from spark_jobs.contract import completeness as cp
    from spark_jobs.contract import paths
    from spark_jobs.contract.spec import load_spec

    data = tmp_path / "data"
    monkeypatch.setenv("STATEKEEPER_DATA", str(data))
    spec = load_spec("sessions")
    assert spec.output == str(data / "tables" / "sessions")
    (data / "landing" / "clickstream").mkdir(parents=True)
    log = tmp_path / "airflow.log"
    h = "2026-03-15T{}:00:00".format
    catch_up = {"dag_id": "catchup_sessions", "mark_success": RUN_MARKED}

    # A run: sessions ending 10:10, 10:40, 11:20 and 12:10; its watermark reached 12:45, so
    # 10:00 (needs 11:30: hour end + the 30-minute gap) and 11:00 (needs 12:30) are complete,
    # 12:00 (needs 13:30) is not.
    _write_sessions(
        Path(spec.output), [("u1", "10:10"), ("u2", "10:40"), ("u1", "11:20"), ("u3", "12:10")]
    )
    _batch(spec, 0, "", oldest="10:05")
    _batch(spec, 1, "12:45")
    first = _phase(own_airflow_home, data, [catch_up], log)
    assert first["runs"][0]["tasks"]["emit_completeness"] == "success", first
    assert [e["key"] for e in first["events"]] == [h(10), h(11)]
    assert {e["extra"]["recompletion"] for e in first["events"]} == {False}
    assert first["consumer_runs"] == [
        {"key": h(10), "state": "success"},
        {"key": h(11), "state": "success"},
    ], "once per complete hour, never for 12:00"
    assert _report(data) == {h(10): 2, h(11): 1}

    # The next run's watermark passes 13:30: 12:00 is complete. The catch-up DAG runs twice
    # (the second finds nothing new): 12:00 is emitted once, and reported once.
    _batch(spec, 2, "13:40")
    second = _phase(own_airflow_home, data, [catch_up, catch_up], log)
    assert [r["tasks"]["emit_completeness"] for r in second["runs"]] == ["success", "skipped"]
    assert [e["key"] for e in second["events"]] == [h(10), h(11), h(12)]
    assert [r["key"] for r in second["consumer_runs"]] == [h(10), h(11), h(12)]
    assert _report(data) == {h(10): 2, h(11): 1, h(12): 1}

    # A backfill publish re-wrote 10:00 (one more session): re-completion, reported again.
    _write_sessions(Path(spec.output), [("u4", "10:50")])
    cp.append(spec.checkpoint, (h(10),), ledger=paths.RECOMPLETIONS_FILE, version=1)
    backfill = {
        "dag_id": "backfill",
        "conf": {
            "job": "sessions",
            "input": str(data / "landing" / "clickstream"),
            "mode": "replace",
        },
        "mark_success": BACKFILL_MARKED,
    }
    third = _phase(own_airflow_home, data, [backfill], log)
    tasks = third["runs"][0]["tasks"]
    assert tasks["emit_recompletions_sessions"] == "success", tasks
    assert tasks["emit_recompletions_user_counts"] == "skipped", tasks
    assert [e["key"] for e in third["events"]] == [h(10), h(11), h(12), h(10)]
    assert third["events"][-1]["extra"]["recompletion"] is True
    assert [r["key"] for r in third["consumer_runs"]] == [h(10), h(11), h(12), h(10)]
    assert {r["state"] for r in third["consumer_runs"]} == {"success"}
    assert _report(data) == {h(10): 3, h(11): 1, h(12): 1}
