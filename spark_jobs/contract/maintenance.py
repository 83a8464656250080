"""The last ``table maintain`` of a job, as ``<checkpoint>/_statekeeper/maintenance.json``: written
by the Spark side after each maintenance, read by the health page (no Spark, no Delta)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from spark_jobs.contract import paths


def location(checkpoint: str) -> str:
    return paths.join(paths.statekeeper_dir(checkpoint), paths.MAINTENANCE_FILE)


@dataclass(frozen=True)
class LastMaintenance:
    finished: str  # ISO-8601 UTC
    seconds: float
    report: dict[str, Any]  # the command's --json object


def write(checkpoint: str, finished: str, seconds: float, report: dict[str, Any]) -> None:
    """Record a finished maintenance (replacing the file at once: a reader sees old or new)."""
    import fsspec

    path = location(checkpoint)
    fs, raw = fsspec.core.url_to_fs(path)
    fs.makedirs(raw.rsplit("/", 1)[0], exist_ok=True)
    tmp = raw + ".tmp"
    with fs.open(tmp, "w") as fh:
        json.dump({"finished": finished, "seconds": seconds, "report": report}, fh, default=str)
    fs.mv(tmp, raw)


def read(checkpoint: str) -> LastMaintenance | None:
    """The last maintenance recorded for the job of ``checkpoint``; None when there is none."""
    import fsspec

    try:
        with fsspec.open(location(checkpoint), "r") as fh:
            raw = json.load(fh)
        return LastMaintenance(str(raw["finished"]), float(raw["seconds"]), dict(raw["report"]))
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None
