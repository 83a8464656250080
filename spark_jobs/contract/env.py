"""How to start a process of the Spark side: the Python, and the environment of ``python -m
spark_jobs``, spark-submit and the processes around them (Airflow in the demo and tests, the
cluster's daemons, benchmarks). One builder, so the interpreter, PATH and PYTHONPATH rules are
written once (the project root is ``spark_jobs.contract.paths.project_root``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from spark_jobs.contract import paths


def python() -> str:
    """The interpreter that has pyspark and delta (the venv's, or the image's)."""
    return os.environ.get("STATEKEEPER_PYTHON") or sys.executable


def cli_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for ``python -m spark_jobs`` and spark-submit.

    The venv's ``bin`` goes first on PATH so ``spark-submit`` is the one shipped with pyspark;
    the driver and Spark's Python workers run the same interpreter.
    """
    env = dict(os.environ)
    root = str(paths.project_root())
    bindir = str(Path(python()).parent)
    env["PATH"] = os.pathsep.join([bindir, env.get("PATH", "")])
    env["STATEKEEPER_HOME"] = root
    env["PYSPARK_PYTHON"] = python()
    env["PYSPARK_DRIVER_PYTHON"] = python()
    pp = [root, *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(pp))
    env.update(extra or {})
    return env


def cli_command(*args: str) -> list[str]:
    return [python(), "-m", "spark_jobs", *args]
