"""The supervisor on real locks, its operator and trigger run in this process (no DAG run, no
Spark): a checkpoint locked for a restore, rollback or repartition is maintenance, waited for and
never counted as a restart; restarts are checked against the budget when they are recorded; and a
stop asked with ``action=stop`` is kept in ``supervisor.json``, so later runs launch nothing until
``action=start``."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "plugins"))

pytestmark = pytest.mark.unit


@pytest.fixture
def ckpt(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("STATEKEEPER_DATA", str(tmp_path))  # the checkpoint is under its roots
    return tmp_path / "checkpoints" / "service_health"


def _operator(ckpt: Path, **kw):
    from statekeeper.supervisor import StreamingSupervisorOperator

    return StreamingSupervisorOperator(
        task_id="supervise",
        job="service_health",
        trigger="processing-time:5s",
        overrides={"checkpoint": str(ckpt)},
        restart_backoff=60,
        max_restarts=2,
        restart_window=3600,
        **kw,
    )


def _event(verdict: str) -> dict:
    run = {"watch_until": time.time() + 600, "restarts": 0, "launched": [], "events": []}
    return {"status": "unhealthy", "health": {"verdict": verdict}, "echo": {"run": run}}


def _fire(trigger) -> dict:
    async def first():
        async for event in trigger.run():
            return event.payload

    return asyncio.run(asyncio.wait_for(first(), 30))


@pytest.mark.parametrize("purpose", ["restore", "rollback", "repartition"])
def test_a_lock_held_for_maintenance_is_waited_for_not_restarted(ckpt, purpose):
    from dataclasses import asdict

    from spark_jobs.contract.lock import JobLock
    from statekeeper.health import Thresholds
    from statekeeper.triggers import DriverWatchTrigger

    th = asdict(Thresholds(startup_grace=1, max_progress_age=1))
    long_ago = time.time() - 3600  # a driver launched long ago, no progress since: past every grace
    with JobLock(str(ckpt), job="service_health", purpose=purpose):
        watch = DriverWatchTrigger(
            str(ckpt), th, watch_until=time.time() + 2, started_at=long_ago, poll_seconds=1
        )
        got = _fire(watch)
    assert got["status"] == "watch_over", got
    assert got["health"]["verdict"] == "maintenance"
    assert purpose in got["health"]["reason"]


def test_the_supervisor_relaunches_after_maintenance_without_counting_a_restart(ckpt):
    from airflow.sdk.exceptions import TaskDeferred

    from spark_jobs.contract.lock import JobLock
    from statekeeper import driver

    done = {**_event("dead"), "status": "maintenance_over"}
    with JobLock(str(ckpt), job="service_health", purpose="run"), pytest.raises(TaskDeferred):
        _operator(ckpt).resume_watch({}, done)  # attaches to the (stand-in) driver
    assert driver.read_state(str(ckpt)).get("restarts", []) == []


def test_restarts_are_checked_against_the_budget_when_recorded(ckpt):
    from airflow.sdk.exceptions import TaskDeferred

    from spark_jobs.contract.lock import JobLock
    from statekeeper import driver
    from statekeeper.supervisor import RestartBudgetSpent

    # A driver holds the lock when the supervisor comes back from each restart: it attaches, so
    # the launch path's budget check never runs; the record itself must refuse the third.
    with JobLock(str(ckpt), job="service_health", purpose="run"):
        for _ in range(2):
            with pytest.raises(TaskDeferred):
                _operator(ckpt).resume_watch({}, _event("dead"))
        with pytest.raises(RestartBudgetSpent, match="restarted 3 times"):
            _operator(ckpt).resume_watch({}, _event("dead"))
    assert len(driver.read_state(str(ckpt))["restarts"]) == 3


def test_a_stop_outlives_the_run_that_asked_for_it(ckpt):
    from airflow.sdk.exceptions import TaskDeferred

    from spark_jobs.contract.lock import JobLock
    from statekeeper import driver

    said = _operator(ckpt, action="stop").execute({"params": {}})
    assert said["action"] == "stop"
    assert driver.read_state(str(ckpt))["stop"]["asked_at"] > 0
    # A later scheduled run (a new task, a restarted triggerer) launches and attaches to nothing:
    # a driver's lock is held here so that code which ignored the stop would attach, not launch.
    with JobLock(str(ckpt), job="service_health", purpose="run"):
        later = _operator(ckpt).execute({"params": {}})
        assert later["result"].startswith("stopped by action=stop"), later
        # nor does a watch that fires while the stop stands
        assert _operator(ckpt).resume_watch({}, _event("dead"))["result"].startswith("stopped")
        with pytest.raises(TaskDeferred):  # action=start lifts the stop and supervises again
            _operator(ckpt, action="start").execute({"params": {}})
    assert "stop" not in driver.read_state(str(ckpt))
