"""Bin-packing compaction (Delta's OPTIMIZE), or Z-ordering on the columns a job declares.

OPTIMIZE commits with ``dataChange=false``: a streaming reader of the table sees no new rows, the
change feed records none, and the rows are the same before and after. Beside a running job its
commit races the job's: a blind append never conflicts with it, a MERGE (upsert jobs) does when
both touched one file; the loser retries (:mod:`spark_jobs.io.conflicts`), the stream's batch
exactly once thanks to its txn, the compaction by planning again on the newer version.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

from spark_jobs.io import conflicts


@dataclass
class Compaction:
    files_removed: int = 0
    files_added: int = 0
    bytes_removed: int = 0
    bytes_added: int = 0
    zorder_by: tuple[str, ...] = ()
    attempts: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def compact(spark: Any, table: str, zorder_by: tuple[str, ...] = ()) -> Compaction:
    """OPTIMIZE ``table`` (Z-ordered by ``zorder_by`` when given); what it rewrote."""
    from delta.tables import DeltaTable

    started = time.perf_counter()

    def optimize() -> Any:
        builder = DeltaTable.forPath(spark, table).optimize()
        result = builder.executeZOrderBy(*zorder_by) if zorder_by else builder.executeCompaction()
        row = result.first()
        assert row is not None  # OPTIMIZE returns one row: the table's metrics
        return row["metrics"]

    metrics, attempts = conflicts.retrying(optimize)
    return Compaction(
        files_removed=int(metrics["numFilesRemoved"]),
        files_added=int(metrics["numFilesAdded"]),
        bytes_removed=int(metrics["filesRemoved"]["totalSize"]),
        bytes_added=int(metrics["filesAdded"]["totalSize"]),
        zorder_by=zorder_by,
        attempts=attempts,
        seconds=round(time.perf_counter() - started, 3),
    )
