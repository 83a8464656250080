"""Idle queries: Spark 3.5+ reports ``onQueryIdle`` instead of empty progress, so the progress log
records them (throttled), readers of batch progress never see them, and the supervisor's health
check calls a caught-up driver ``idle``, not ``stalled``."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "plugins"))

from spark_jobs.runtime import progress  # noqa: E402
from statekeeper.health import ALIVE_VERDICTS, Thresholds, assess  # noqa: E402

pytestmark = pytest.mark.unit


def _batch(batch_id: int, logged_at: float, rows: int = 5) -> dict:
    return {
        "name": "service_health",
        "batchId": batch_id,
        "numInputRows": rows,
        "durationMs": {"triggerExecution": 800},
        "stateOperators": [{"numRowsTotal": 3}],
        "statekeeper": {"job": "service_health", "logged_at": logged_at},
    }


def _listener(tmp_path: Path):
    ckpt = str(tmp_path / "ckpt")
    return ckpt, progress.make_listener("service_health", {"service_health": ckpt})


def test_idle_events_are_logged_throttled_and_hidden_from_batch_readers(tmp_path, monkeypatch):
    ckpt, listener = _listener(tmp_path)
    qid, run = uuid.uuid4(), uuid.uuid4()
    listener.onQueryStarted(SimpleNamespace(id=qid, runId=run, name="service_health"))
    progress.append_line(progress.progress_path(ckpt), _batch(0, 1000.0))
    clock = iter([5000.0, 5010.0, 5000.0 + progress.IDLE_LOG_EVERY + 1])
    monkeypatch.setattr(progress.time, "time", lambda: next(clock))
    idle = SimpleNamespace(id=qid, runId=run, timestamp="2026-11-22T12:00:00.000Z")
    for _ in range(3):  # Spark sends one every 10 s; the second falls inside the throttle
        listener.onQueryIdle(idle)
    # an idle event of a query this listener does not log is ignored
    listener.onQueryIdle(SimpleNamespace(id=uuid.uuid4(), runId=run, timestamp="x"))

    everything = progress.read_progress(ckpt, idle=True)
    assert [r.get("event") for r in everything] == [None, "idle", "idle"]
    assert everything[1]["id"] == str(qid) and everything[1]["name"] == "service_health"
    assert [r["statekeeper"]["logged_at"] for r in everything[1:]] == [5000.0, 5061.0]
    assert progress.read_progress(ckpt) == [everything[0]]  # batch readers see batches only
    assert progress.last_progress(ckpt) == everything[0]
    raw = Path(progress.progress_path(ckpt)).read_text().splitlines()
    assert all(json.loads(line) for line in raw) and len(raw) == 3


def test_health_calls_a_caught_up_driver_idle_not_stalled():
    th = Thresholds(max_progress_age=300)
    started, now = 1000.0, 10_000.0
    batches = [_batch(i, 1000.0 + i) for i in range(3)]
    idle = progress.idle_record("service_health", "q", "r", "t", "service_health", now - 30)

    without = assess(batches, True, th, now=now, started_at=started)
    assert without.verdict == "stalled"  # what an idle job looked like before idle records

    h = assess([*batches, idle], True, th, now=now, started_at=started)
    assert h.verdict == "idle" and h.verdict in ALIVE_VERDICTS and not h.needs_restart
    assert h.progress_age == 30 and h.batch_id == 2 and h.state_rows == 3

    old_idle = {**idle, "statekeeper": {"logged_at": now - 900}}
    assert assess([*batches, old_idle], True, th, now=now, started_at=started).verdict == "stalled"
    assert assess([*batches, idle], False, th, now=now, started_at=started).verdict == "dead"


def test_an_idle_record_alone_means_the_driver_started():
    th = Thresholds()
    idle = progress.idle_record("service_health", "q", "r", "t", "service_health", 2000.0)
    h = assess([idle], True, th, now=2010.0, started_at=1000.0)
    assert h.verdict == "idle" and h.batch_id is None
