"""What listens where on a developer's machine: `make airflow` binds its api-server to 127.0.0.1
unless ``$STATEKEEPER_AIRFLOW_HOST`` says otherwise (asked of Airflow's own configuration), and a
local-master Spark driver submitted by the DAGs binds the loopback address; a cluster driver
keeps Spark's defaults (its executors must reach it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "plugins"))

pytestmark = pytest.mark.unit


def _airflow_host(env: dict[str, str]) -> str:
    airflow = str(Path(sys.executable).parent / "airflow")
    got = subprocess.run(
        [airflow, "config", "get-value", "api", "host"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return got.stdout.strip().splitlines()[-1]


def test_make_airflow_listens_on_loopback_unless_opened(tmp_path, monkeypatch):
    from scripts import airflow_standalone

    monkeypatch.delenv("STATEKEEPER_AIRFLOW_HOST", raising=False)
    assert _airflow_host(airflow_standalone.standalone_env(tmp_path)) == "127.0.0.1"
    monkeypatch.setenv("STATEKEEPER_AIRFLOW_HOST", "0.0.0.0")
    assert _airflow_host(airflow_standalone.standalone_env(tmp_path)) == "0.0.0.0"


@pytest.mark.parametrize(
    ("master", "loopback"),
    [
        ("local[2]", True),
        ("local", True),
        ("local-cluster[2,1,1024]", True),
        ("spark://h:7077", False),
    ],
)
def test_a_local_driver_submitted_by_the_dags_binds_loopback(master, loopback):
    from statekeeper.spark_submit import SparkTarget, application

    cmd = SparkTarget(master).command(
        application(),
        ["run", "sessions"],
        name="n",
        py_files="/z.zip",
        jars="/a.jar",
        path=str(Path(sys.executable).parent),
    )
    confs = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--conf"]
    bound = {"spark.driver.host=127.0.0.1", "spark.driver.bindAddress=127.0.0.1"}
    assert bound.issubset(confs) if loopback else not bound.intersection(confs), confs
