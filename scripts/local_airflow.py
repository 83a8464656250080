"""The embedded default's Airflow: AIRFLOW_HOME under the data folder, SQLite, this checkout's
dags and plugins, and ``spark_default`` as an env-var connection to local Spark."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from spark_jobs.runtime import paths

SPARK_LOCAL = json.dumps({"conn_type": "spark", "host": "local[2]"})


def airflow_env(home: Path, data: Path | None = None, **extra: str) -> dict[str, str]:
    """The environment of an Airflow process on ``home``; ``data`` relocates ``.data/`` (the
    DAG tests' own folder), ``extra`` is set last."""
    root = paths.project_root()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW__")}
    bindir = str(Path(sys.executable).parent)
    env.update(
        AIRFLOW_HOME=str(home),
        AIRFLOW__CORE__DAGS_FOLDER=str(root / "dags"),
        AIRFLOW__CORE__PLUGINS_FOLDER=str(root / "plugins"),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=f"sqlite:///{home}/airflow.db",
        AIRFLOW_CONN_SPARK_DEFAULT=env.get("AIRFLOW_CONN_SPARK_DEFAULT", SPARK_LOCAL),
        PYTHONPATH=os.pathsep.join([str(root), str(root / "plugins")]),
        STATEKEEPER_HOME=str(root),
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        PATH=os.pathsep.join([bindir, env.get("PATH", "")]),
    )
    if data is not None:
        env["STATEKEEPER_DATA"] = str(data)
    env.update(extra)
    return env


def airflow(home: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    exe = str(Path(sys.executable).parent / "airflow")
    return subprocess.run([exe, *args], env=airflow_env(home), cwd=paths.project_root(), **kw)


def home() -> Path:
    h = paths.data_dir() / "airflow"
    h.mkdir(parents=True, exist_ok=True)
    return h


def migrate(h: Path) -> None:
    proc = airflow(h, "db", "migrate", capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"statekeeper: airflow db migrate failed: {proc.stderr.strip().splitlines()[-1:]}")
