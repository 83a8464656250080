"""A throwaway Airflow for the DAG tests: its own AIRFLOW_HOME (SQLite), the project's dags and
plugins, ``spark_default`` as an env-var connection (local[2]). Airflow runs in subprocesses, so
its settings never leak into other tests and a test that hangs can be killed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def airflow_env(home: Path, data: Path | None = None, **extra: str) -> dict[str, str]:
    """The embedded default's environment (``scripts/local_airflow.py``), always on local Spark
    and with Airflow's own INFO logs, whatever the caller's shell says."""
    from scripts import local_airflow

    defaults = {
        "AIRFLOW_CONN_SPARK_DEFAULT": local_airflow.SPARK_LOCAL,
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
    }
    return local_airflow.airflow_env(home, data, **{**defaults, **extra})


def migrate(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    airflow = str(Path(sys.executable).parent / "airflow")
    subprocess.run(
        [airflow, "db", "migrate"],
        env=airflow_env(home),
        check=True,
        capture_output=True,
        timeout=300,
    )


def run_dags(
    home: Path,
    runs: list[dict[str, Any]],
    log: Path,
    data: Path | None = None,
    timeout: float = 600,
    env: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """``dag.test()`` each ``{"dag_id", "conf"}`` in one subprocess; per run: state, task states,
    return values, or the exception raised before the run started. ``env`` is set last (e.g.
    ``AIRFLOW_CONN_SPARK_DEFAULT`` pointed at a cluster)."""
    start = log.stat().st_size if log.exists() else 0
    with open(log, "a") as fh:  # streamed, so a run that hangs still leaves its log
        proc = subprocess.run(
            [sys.executable, str(Path(__file__).with_name("dagtest_main.py"))],
            input=json.dumps(runs),
            env={**airflow_env(home, data), **(env or {})},
            stdout=fh,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
            cwd=str(ROOT),
        )
    with open(log) as fh:
        fh.seek(start)
        lines = [ln for ln in fh.read().splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or len(lines) != len(runs):
        tail = "\n".join(log.read_text().splitlines()[-60:])
        raise AssertionError(f"dag runner exited {proc.returncode}; log {log}:\n{tail}")
    return [json.loads(ln[len("RESULT ") :]) for ln in lines]
