"""The supervisor DAG on a real continuous driver: it restarts a killed driver, attaches to a
running one instead of starting a second, and the runner refuses a second writer (exit 3)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

import pytest
from airflow_env import ROOT, airflow_env, run_dags
from drivers import cleanup, holder, progress_lines, wait_for

pytestmark = pytest.mark.dags


def test_supervisor_restarts_a_killed_driver_and_never_starts_a_second(airflow_home, tmp_path):
    landing = tmp_path / "landing" / "service-logs"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "spark_jobs",
            "generate",
            "service-logs",
            "--out",
            str(landing),
            "--events",
            "200",
            "--seed",
            "3",
        ],
        check=True,
        cwd=ROOT,
        capture_output=True,
        env=airflow_env(airflow_home),
    )
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
    # The first run's watch only has to outlast launch -> first progress -> kill -> relaunch:
    # about 17 s of it on a quiet machine (and the wait for the first progress below stays well
    # inside it on a loaded one); the relaunched driver outlives the task either way.
    watch_minutes = 1.25
    results: list = []
    runner = threading.Thread(
        target=lambda: results.extend(
            run_dags(
                airflow_home,
                [
                    {
                        "dag_id": "supervise_service_health",
                        "conf": {**conf, "watch_minutes": watch_minutes},
                    }
                ],
                log,
                data=tmp_path,
            )
        ),
        daemon=True,
    )
    try:
        runner.start()
        first = wait_for(
            "the first driver's progress",
            lambda: progress_lines(ckpt) > 0 and holder(ckpt),
            watch_minutes * 60,
        )
        os.kill(int(first["pid"]), signal.SIGKILL)  # the Python driver holding the lock dies
        second = wait_for(
            "a relaunched driver",
            lambda: (h := holder(ckpt)) and h.get("pid") != first["pid"] and h,
            150,
        )
        # While it runs, a second writer on the same checkpoint is refused by the runner.
        direct = subprocess.run(
            [
                sys.executable,
                "-m",
                "spark_jobs",
                "run",
                "service_health",
                "--trigger",
                "processing-time:5s",
                "--input",
                str(landing),
                "--output",
                str(tmp_path / "tables" / "service_health"),
                "--checkpoint",
                str(ckpt),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env=airflow_env(airflow_home, data=tmp_path),
            timeout=120,
        )
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
        # alive: processing, or caught up and waiting (the 200 lines take seconds); or still
        # starting
        from statekeeper.health import ALIVE_VERDICTS

        assert ret["health"]["verdict"] in (*ALIVE_VERDICTS, "starting")
        assert holder(ckpt)["pid"] == second["pid"]  # still running after the task ended

        # A new supervisor run (a retry, the next schedule) attaches; then `stop` ends the driver.
        again, stopped = run_dags(
            airflow_home,
            [
                {"dag_id": "supervise_service_health", "conf": {**conf, "watch_minutes": 0.05}},
                {"dag_id": "supervise_service_health", "conf": {**conf, "action": "stop"}},
            ],
            log,
            data=tmp_path,
        )
        assert again["state"] == "success", again
        assert again["returns"]["supervise"]["launched"] == []
        assert again["returns"]["supervise"]["events"][0]["what"] == "attached"
        assert again["returns"]["supervise"]["events"][0]["pid"] == second["pid"]
        # the plan ran on the live checkpoint (nothing changed) before attaching; a stop skips it
        assert again["tasks"]["upgrade_plan"] == "success", again["tasks"]
        assert again["returns"]["upgrade_plan"] == {"exit_code": 0, "planned": True}
        assert stopped["state"] == "success", stopped
        assert stopped["tasks"]["upgrade_plan"] == "skipped", stopped["tasks"]
        assert holder(ckpt) is None
        launches = json.loads((ckpt / "_statekeeper" / "supervisor.json").read_text())["launches"]
        assert launches == 2
    finally:
        cleanup(ckpt)
        # A failed assertion leaves the supervisor's DAG run going in its thread, and it would
        # relaunch the driver just killed: let it end (its watch is bounded), then clean again.
        runner.join(timeout=300)
        cleanup(ckpt)
