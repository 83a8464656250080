"""VACUUM with the retention :mod:`plan` chose: files removed from the table longer ago than that
are deleted, every other one stays (so every snapshot kept can still be restored).

VACUUM skips folders whose names start with ``_`` or ``.``: the output's ``_quarantine`` table,
inside the output's folder, is never touched by the output's VACUUM (it gets its own).
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from spark_jobs.contract import paths

CHECK_CONF = "spark.databricks.delta.retentionDurationCheck.enabled"


@dataclass
class Vacuum:
    retention_hours: float
    files_deleted: int = 0
    bytes_deleted: int = 0
    dry_run: bool = False
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def data_files(table: str) -> dict[str, int]:
    """Every data file in the table's folder (live or not), path -> bytes; hidden folders
    (``_delta_log``, ``_quarantine``, ``_change_data``...) and ``.crc`` files left out."""
    local = paths.local_path(table)
    out: dict[str, int] = {}
    if local is None or not local.is_dir():
        return out
    for root, dirs, names in os.walk(local):
        dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
        for n in names:
            if not n.startswith(("_", ".")):
                p = Path(root) / n
                out[str(p)] = p.stat().st_size
    return out


def _plain(path: str) -> str:
    """A path as Delta's VACUUM lists it (``file:/tmp/t/part-0.parquet``) as a local one."""
    if path.startswith("file:"):
        path = "/" + path[len("file:") :].lstrip("/")
    return path


def vacuum(spark: Any, table: str, retention_hours: float, dry_run: bool = False) -> Vacuum:
    """VACUUM ``table`` keeping ``retention_hours``; with ``dry_run`` only count what would go."""
    started = time.perf_counter()
    # Delta's own check (retention >= the table's delta.deletedFileRetentionDuration, counted in
    # whole hours) is already a floor of the plan's retention; left on, it refuses a table whose
    # spec asks for less than an hour.
    spark.conf.set(CHECK_CONF, "false")
    try:
        return _vacuum(spark, table, retention_hours, dry_run, started)
    finally:
        spark.conf.unset(CHECK_CONF)


def _vacuum(
    spark: Any, table: str, retention_hours: float, dry_run: bool, started: float
) -> Vacuum:
    # Delta rounds a VACUUM's RETAIN to the nearest whole hour (down, too): a dry run lists with
    # whole hours rounded up; the real one names none and gets the table's own
    # delta.deletedFileRetentionDuration, which maintenance has just set to this retention.
    hours = float(-(-retention_hours // 1))
    before = data_files(table)
    if dry_run:
        rows = spark.sql(f"VACUUM delta.`{table}` RETAIN {hours:.9f} HOURS DRY RUN").collect()
        doomed = [_plain(r[0]) for r in rows]
        sizes = [before.get(p, 0) for p in doomed]
        took = round(time.perf_counter() - started, 3)
        return Vacuum(retention_hours, len(doomed), sum(sizes), True, took)
    from delta.tables import DeltaTable

    DeltaTable.forPath(spark, table).vacuum()
    after = data_files(table)
    gone = [p for p in before if p not in after]
    return Vacuum(
        retention_hours,
        len(gone),
        sum(before[p] for p in gone),
        False,
        round(time.perf_counter() - started, 3),
    )
