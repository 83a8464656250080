"""Who did it, and with which command: the ``who`` and ``args`` of every row."""

from __future__ import annotations

import getpass
import os
import shlex
import sys
from collections.abc import Sequence

# Airflow puts these in a task's environment (and the hooks pass it on to ``python -m spark_jobs``).
AIRFLOW_VARS = ("AIRFLOW_CTX_DAG_ID", "AIRFLOW_CTX_DAG_RUN_ID", "AIRFLOW_CTX_TASK_ID")
_command: list[str] = []


def remember(argv: Sequence[str] | None) -> None:
    """Keep the command line this process was given (``spark_jobs.cli.main`` calls it)."""
    _command[:] = list(sys.argv[1:] if argv is None else argv)


def who() -> str:
    """``airflow:DAG/RUN/TASK`` inside an Airflow task, else ``cli:USER``."""
    ctx = [os.environ.get(v) for v in AIRFLOW_VARS]
    if ctx[0]:
        return "airflow:" + "/".join(c for c in ctx if c)
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (a container's arbitrary uid)
        user = str(os.getuid())
    return f"cli:{user}"


def args() -> str:
    """The command line, as one shell-quoted string (empty when not run from the CLI)."""
    return shlex.join(["python", "-m", "spark_jobs", *_command]) if _command else ""
