"""The catch-up DAG runs ``upgrade plan`` before it submits (real ``dag.test()``, real Spark):
fraud_alerts bound at threshold 5, its spec in ``$STATEKEEPER_SPECS`` then says 3. The run
fails at ``upgrade_plan`` with the plan's line and the command that applies the change, and
nothing is submitted (no batch committed, the table's version unchanged, though new input
waits); the plan's result is kept in the checkpoint for the health page. After ``upgrade
migrate`` the same DAG runs the job."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from airflow_env import ROOT, airflow_env, run_dags

from spark_jobs.contract import delta
from spark_jobs.contract.env import cli_command
from spark_jobs.generate import generate

pytestmark = pytest.mark.dags

JOB = "fraud_alerts"
DAG = f"catchup_{JOB}"


def _cli(env: dict[str, str], *args: str) -> None:
    proc = subprocess.run(
        cli_command(*args), env=env, cwd=str(ROOT), capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


def _threshold(specs: Path, value: int) -> None:
    f = specs / f"{JOB}.yaml"
    raw = yaml.safe_load(f.read_text())
    raw["params"]["threshold"] = value
    f.write_text(yaml.safe_dump(raw))


def _commits(ckpt: Path) -> list[str]:
    return sorted(p.name for p in (ckpt / "commits").iterdir() if not p.name.startswith("."))


def test_catch_up_stops_at_the_plan_until_the_change_is_migrated(airflow_home, tmp_path):
    data, specs = tmp_path / "data", tmp_path / "specs"
    shutil.copytree(ROOT / "include" / "jobs", specs)
    env = airflow_env(airflow_home, data, STATEKEEPER_SPECS=str(specs))
    landing = str(data / "landing" / "auth")
    generate("auth", landing, events=400, keys=20, seed=7)
    _cli(env, "run", JOB)  # v1: the checkpoint is bound at threshold 5
    ckpt, table = data / "checkpoints" / JOB, data / "tables" / JOB
    commits, version = _commits(ckpt), delta.version(str(table))
    assert commits and version is not None

    _threshold(specs, 3)
    generate("auth", landing, events=200, keys=20, seed=8)  # input a submitted run would read
    log = tmp_path / "dag_runs.log"
    runs = [{"dag_id": DAG, "conf": {"run_quality": False}}]
    extra = {"STATEKEEPER_SPECS": str(specs)}

    (blocked,) = run_dags(airflow_home, runs, log, data=data, timeout=900, env=extra)
    assert blocked["state"] == "failed", blocked
    assert blocked["tasks"]["validate_checkpoint"] == "success", blocked["tasks"]
    assert blocked["tasks"]["upgrade_plan"] == "failed", blocked["tasks"]
    assert blocked["tasks"]["catch_up"] == "upstream_failed", blocked["tasks"]
    text = log.read_text()
    # the task's error: the worst change's line, then the command that applies it
    assert f"UpgradeNeeded: upgrade plan {JOB}: compatible params.threshold: 5 -> 3: " in text
    assert f"; python -m spark_jobs upgrade migrate {JOB} accepts it (snapshot first)" in text
    assert _commits(ckpt) == commits and delta.version(str(table)) == version  # nothing ran
    from spark_jobs.contract import upgrade_plan  # the record the health page reads

    last = upgrade_plan.read(str(ckpt))
    assert last is not None and last.worst == "compatible" and "threshold" in last.line

    _cli(env, "upgrade", "migrate", JOB)
    assert upgrade_plan.read(str(ckpt)).worst is None  # type: ignore[union-attr]
    (ran,) = run_dags(airflow_home, runs, log, data=data, timeout=900, env=extra)
    assert ran["state"] == "success", ran
    assert ran["tasks"]["upgrade_plan"] == ran["tasks"]["catch_up"] == "success", ran["tasks"]
    assert len(_commits(ckpt)) > len(commits)  # the run read the waiting input
