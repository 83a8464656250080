"""Freshness in event time without a JVM: the lags (now minus the watermark; landing files the
checkpoint has not read and the oldest one's age) and the alerting state machine driven by a
controlled clock: the feeder stops, the lag grows past the limit, exactly one alert however
many checks follow; it resumes, exactly one recovery."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "plugins"))

from spark_jobs.contract.blocks import Freshness  # noqa: E402
from spark_jobs.contract.spec import load_spec  # noqa: E402
from statekeeper import freshness  # noqa: E402

pytestmark = pytest.mark.unit

T = 1_773_576_000.0  # 2026-03-15T12:00:00Z


def _iso(t: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


def _spec(tmp_path):
    spec = load_spec("service_health")
    land = tmp_path / "land"
    land.mkdir()
    return replace(
        spec,
        inputs={"service-logs": str(land)},
        checkpoint=str(tmp_path / "ckpt"),
        freshness=Freshness(max_watermark_lag=900.0, max_input_lag=600.0),
    )


def test_the_feeder_stops_one_alert_it_resumes_one_recovery(tmp_path):
    spec = _spec(tmp_path)
    state, said = freshness.AlertState(), []
    # The feeder runs until 12:00: the watermark follows event time, 5 minutes behind the clock.
    # Then it stops: the watermark stays at 11:55 while the clock goes on, checked every minute.
    for minute in range(0, 40):
        now = T + 60 * minute
        wm = min(now, T) - 300
        row = freshness.lags(spec, _iso(wm), None, now)
        state, action = freshness.step(state, freshness.breaches(spec, row), now)
        if action:
            said.append((minute, action, row["watermark_lag_seconds"]))
    assert said == [(11, "alert", 960.0)], "one alert, when the lag first passed 15 minutes"
    # It resumes at 12:40: the watermark is 5 minutes behind again; checks go on.
    for minute in range(40, 50):
        now = T + 60 * minute
        row = freshness.lags(spec, _iso(now - 300), None, now)
        state, action = freshness.step(state, freshness.breaches(spec, row), now)
        if action:
            said.append((minute, action, row["watermark_lag_seconds"]))
    assert said[1:] == [(40, "recovered", 300.0)]
    assert freshness.AlertState.from_json(state.to_json()) == state  # kept between checks


def test_input_lag_counts_files_not_read_and_the_oldest_age(tmp_path):
    spec = _spec(tmp_path)
    land = Path(spec.input)
    read, unread = land / "a.jsonl", land / "b.jsonl"
    (land / "_staging").mkdir()  # a hidden folder, as a hidden name: Spark never reads them
    for f in (read, unread, land / ".hidden", land / "_staging" / "c.jsonl"):
        f.write_text("{}\n")
    # An old mtime (cp -p, touch -d) is not when the file arrived: the kernel's ctime says that.
    os.utime(unread, (T - 700, T - 700))
    now = os.stat(unread).st_ctime + 700
    log = Path(spec.checkpoint) / "sources" / "0" / "0"
    log.parent.mkdir(parents=True)
    log.write_text("v1\n" + json.dumps({"path": f"file://{read}", "batchId": 0}) + "\n")
    row = freshness.lags(spec, _iso(now - 60), {"topic": {"behind": 0}}, now)
    assert row["input_lag"] == {"records": 0, "files": 1, "oldest_seconds": 700.0}
    assert row["watermark_lag_seconds"] == 60.0
    assert freshness.breaches(spec, row) == ["oldest unread input 700s old > max_input_lag 600s"]
    assert (
        freshness.lags(spec, "1970-01-01T00:00:00.000Z", None, T)["watermark_lag_seconds"] is None
    )
