"""Where the Spark side is and how to call it: the project root, the Python, the CLI's env."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def project_root() -> Path:
    """$STATEKEEPER_HOME, else the checkout holding this plugins folder."""
    env = os.environ.get("STATEKEEPER_HOME")
    if env:
        return Path(env).resolve()
    return Path(__file__).resolve().parents[2]


def python() -> str:
    """The interpreter that has pyspark and delta (the venv's, or the image's)."""
    return os.environ.get("STATEKEEPER_PYTHON") or sys.executable


def cli_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for ``python -m spark_jobs`` and spark-submit.

    The venv's ``bin`` goes first on PATH so the provider's hook finds the ``spark-submit`` shipped
    with pyspark; Spark's Python workers run the same interpreter.
    """
    env = dict(os.environ)
    root = str(project_root())
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
