"""The freshness alert's wiring through real Airflow (``dag.test()``, SQLite, Variables): the
continuous job's watermark stops while the clock goes on, and ``freshness_watch`` raises ONE
alert through the configured notifier however often it runs; the watermark catches up, ONE
"recovered". (The lag arithmetic and the state machine: tests/unit/plugins/test_freshness.py.)"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from airflow_env import run_dags

pytestmark = pytest.mark.dags

JOB = "service_health"  # its spec sets max_watermark_lag: 15 minutes


def _batch(data: Path, batch: int, watermark_age: float) -> None:
    """A progress record of the job: a batch just now, with the watermark this far behind."""
    from spark_jobs.runtime import progress

    now = time.time()
    iso = lambda t: datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")  # noqa: E731
    record = {
        "id": "q",
        "runId": "r",
        "name": JOB,
        "batchId": batch,
        "timestamp": iso(now),
        "numInputRows": 1,
        "eventTime": {"watermark": iso(now - watermark_age)},
        "statekeeper": {"job": JOB, "logged_at": now},
    }
    ckpt = str(data / "checkpoints" / JOB)
    progress.append_line(progress.progress_path(ckpt), record)


def _said(data: Path) -> list[str]:
    log = data / "alerts" / "freshness.jsonl"
    if not log.exists():
        return []
    return [json.loads(ln)["action"] for ln in log.read_text().splitlines()]


def test_one_alert_while_the_lag_lasts_and_one_recovery(airflow_home, tmp_path):
    data = tmp_path / "data"
    log = tmp_path / "runs.log"
    watch = {"dag_id": "freshness_watch", "conf": {"jobs": [JOB]}}
    _batch(data, 0, watermark_age=1800)  # the feeder stopped half an hour ago
    first, second = run_dags(airflow_home, [watch, watch], log, data=data)
    assert first["state"] == second["state"] == "success", (first, second)
    assert first["returns"]["check_freshness"][JOB]["action"] == "alert"
    assert second["returns"]["check_freshness"][JOB]["action"] is None
    assert second["returns"]["check_freshness"][JOB]["state"] == "breached"
    assert _said(data) == ["alert"]

    _batch(data, 1, watermark_age=60)  # it resumed: the watermark is a minute behind
    (third,) = run_dags(airflow_home, [watch], log, data=data)
    assert third["returns"]["check_freshness"][JOB]["action"] == "recovered"
    assert _said(data) == ["alert", "recovered"]
