"""The last ``upgrade plan`` of a job, as ``<checkpoint>/_statekeeper/plan.json``: written by the
plan command each time it runs (the catch-up and supervise DAGs run it before every submit, and
``upgrade migrate`` after it accepted a change), read by the health page, which runs nothing.

The file holds the command's ``--json`` object and when it was made; a plan made with
``--checkpoint`` is kept in that checkpoint, so each checkpoint says what its own plan found."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any

from spark_jobs.contract import paths


def location(checkpoint: str) -> str:
    return paths.join(paths.statekeeper_dir(checkpoint), paths.PLAN_FILE)


@dataclass(frozen=True)
class LastPlan:
    planned_at: str  # ISO-8601 UTC
    worst: str | None  # the worst verdict; None: nothing changed
    exit_code: int  # the plan's exit code (ExitCode.UPGRADE_* or 0)
    line: str  # the worst change's line ("" when nothing changed)
    next_step: str  # what applies it ("" when nothing changed)


def write(checkpoint: str, plan: dict[str, Any]) -> None:
    """Record ``plan`` (the ``--json`` object), replacing the file at once: a reader sees the
    old record or the new one."""
    import fsspec

    path = location(checkpoint)
    fs, raw = fsspec.core.url_to_fs(path)
    fs.makedirs(raw.rsplit("/", 1)[0], exist_ok=True)
    tmp = f"{raw}.{os.getpid()}.tmp"  # a DAG's plan and a user's may write at once
    planned_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with fs.open(tmp, "w") as fh:
        json.dump({"planned_at": planned_at, "plan": plan}, fh, default=str)
    fs.mv(tmp, raw)


def read(checkpoint: str) -> LastPlan | None:
    """The last plan recorded in ``checkpoint``; None when there is none (or it is unreadable:
    the page then shows no plan rather than failing)."""
    import fsspec

    try:
        with fsspec.open(location(checkpoint), "r") as fh:
            raw = json.load(fh)
        plan = raw["plan"]
        return LastPlan(
            planned_at=str(raw["planned_at"]),
            worst=plan.get("worst"),
            exit_code=int(plan["exit_code"]),
            line=str(plan.get("worst_line") or ""),
            next_step=str(plan.get("next_step") or ""),
        )
    except (FileNotFoundError, ValueError, KeyError, TypeError, AttributeError):
        return None
