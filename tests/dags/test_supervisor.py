"""The supervisor DAG on a real continuous driver: it restarts a killed driver, attaches to a
running one instead of starting a second, and the runner refuses a second writer (exit 3)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from airflow_env import ROOT, airflow_env, run_dags

pytestmark = pytest.mark.dags


def _holder(ckpt: Path) -> dict | None:
    from spark_jobs.runtime.lock import holder

    return holder(str(ckpt))


def _wait(what, predicate, timeout: float, every: float = 1.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def _progress_lines(ckpt: Path) -> int:
    p = ckpt / "_statekeeper" / "progress.jsonl"
    return len(p.read_text().splitlines()) if p.exists() else 0


def _cleanup(ckpt: Path) -> None:
    """Never leave a driver behind, whatever the test did; and never kill a stranger that got a
    recorded pid since (pids wrap within minutes on a busy machine): check identity first."""
    from spark_jobs.runtime import procs

    state_file = ckpt / "_statekeeper" / "supervisor.json"
    state = json.loads(state_file.read_text()) if state_file.exists() else {}
    info = (_holder(ckpt) if ckpt.exists() else None) or {}
    for rec, kill in ((state, os.killpg), (info, os.kill)):
        pid = rec.get("pid")
        if pid and procs.identity_problem(int(pid), rec.get("start")) is None:
            try:
                kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass  # ended meanwhile


def test_supervisor_restarts_a_killed_driver_and_never_starts_a_second(airflow_home, tmp_path):
    landing = tmp_path / "landing" / "service-logs"
    subprocess.run(
        [sys.executable, "-m", "spark_jobs", "generate", "service-logs", "--out", str(landing), "--events", "200", "--seed", "3"],
        check=True, cwd=ROOT, capture_output=True, env=airflow_env(airflow_home),
    )  # fmt: skip
    ckpt = tmp_path / "checkpoints" / "service_health"  # under the roots of data=tmp_path
    conf = {
        "trigger": "processing-time:5s",
        "poll_seconds": 1,
        "restart_backoff_seconds": 2,
        "max_restarts": 2,
        "input": str(landing),
        "output": str(tmp_path / "tables" / "service_health"),
        "checkpoint": str(ckpt),
    }
    log = tmp_path / "airflow.log"
    results: list = []
    runner = threading.Thread(
        target=lambda: results.extend(
            run_dags(
                airflow_home,
                [{"dag_id": "supervise_service_health", "conf": {**conf, "watch_minutes": 2.5}}],
                log,
                data=tmp_path,
            )
        ),
        daemon=True,
    )
    try:
        runner.start()
        first = _wait(
            "the first driver's progress", lambda: _progress_lines(ckpt) > 0 and _holder(ckpt), 150
        )
        os.kill(int(first["pid"]), signal.SIGKILL)  # the Python driver holding the lock dies
        second = _wait(
            "a relaunched driver",
            lambda: (h := _holder(ckpt)) and h.get("pid") != first["pid"] and h,
            150,
        )
        # While it runs, a second writer on the same checkpoint is refused by the runner.
        direct = subprocess.run(
            [sys.executable, "-m", "spark_jobs", "run", "service_health", "--trigger", "processing-time:5s",
             "--input", str(landing), "--output", str(tmp_path / "tables" / "service_health"), "--checkpoint", str(ckpt)],
            cwd=ROOT, capture_output=True, text=True, env=airflow_env(airflow_home, data=tmp_path), timeout=120,
        )  # fmt: skip
        assert direct.returncode == 3, direct.stderr
        assert "in use by" in direct.stderr
        runner.join(timeout=400)
        assert results, f"supervisor run did not finish; see {log}"
        res = results[0]
        assert res["state"] == "success", res
        ret = res["returns"]["supervise"]
        assert ret["restarts"] == 1
        assert len(ret["launched"]) == 2
        assert [e["what"] for e in ret["events"]] == ["launched", "dead", "launched"]
        assert ret["health"]["verdict"] in ("healthy", "starting")
        assert _holder(ckpt)["pid"] == second["pid"]  # still running after the task ended

        # A new supervisor run (a retry, the next schedule) attaches; then `stop` ends the driver.
        again, stopped = run_dags(
            airflow_home,
            [
                {"dag_id": "supervise_service_health", "conf": {**conf, "watch_minutes": 0.2}},
                {"dag_id": "supervise_service_health", "conf": {**conf, "action": "stop"}},
            ],
            log,
            data=tmp_path,
        )
        assert again["state"] == "success", again
        assert again["returns"]["supervise"]["launched"] == []
        assert again["returns"]["supervise"]["events"][0]["what"] == "attached"
        assert again["returns"]["supervise"]["events"][0]["pid"] == second["pid"]
        assert stopped["state"] == "success", stopped
        assert _holder(ckpt) is None
        launches = json.loads((ckpt / "_statekeeper" / "supervisor.json").read_text())["launches"]
        assert launches == 2
    finally:
        _cleanup(ckpt)
        # A failed assertion leaves the supervisor's DAG run going in its thread, and it would
        # relaunch the driver just killed: let it end (its watch is bounded), then clean again.
        runner.join(timeout=300)
        _cleanup(ckpt)
