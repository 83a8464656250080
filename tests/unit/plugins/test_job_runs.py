"""Every run of a job on the health page: a job whose live query never ran but which ran on a
checkpoint of its own (the demo's replay of the continuous service_health) is not "never run":
its row names that run, its last batch and its real watermark lag."""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "plugins"))

pytestmark = pytest.mark.unit


def test_a_replay_on_its_own_checkpoint_is_shown_with_its_lag(tmp_path, monkeypatch):
    monkeypatch.setenv("STATEKEEPER_DATA", str(tmp_path))
    from spark_jobs.contract.spec import load_spec
    from spark_jobs.runtime import progress
    from statekeeper import health_page, health_report

    spec = load_spec("service_health")
    now = time.time()
    iso = datetime.fromtimestamp(now - 600, UTC).isoformat().replace("+00:00", "Z")
    replay = tmp_path / "checkpoints" / "service_health_replay"
    other = tmp_path / "checkpoints" / "sessions"  # another job's log: not this job's run
    for ckpt, job in ((replay, "service_health"), (other, "sessions")):
        record = {
            "batchId": 3,
            "timestamp": iso,
            "eventTime": {"watermark": iso},
            "statekeeper": {"job": job, "logged_at": now},
        }
        progress.append_line(progress.progress_path(str(ckpt)), record)

    row = health_report.job_row(spec, now)
    assert row["status"] == "idle" and "service_health_replay" in row["reason"]
    assert row["last_batch_at"] is None  # the live (continuous) query has not run
    assert [r["checkpoint"] for r in row["other_runs"]] == [str(replay)]
    assert row["other_runs"][0]["watermark_lag_seconds"] == pytest.approx(600, abs=1)
    html = health_page.overview_row(row, "/statekeeper", now)
    assert "service_health_replay" in html and "never run" not in html
