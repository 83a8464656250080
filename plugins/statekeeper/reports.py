"""Small reports read from a job's table without Spark (deltalake + pyarrow), per event-time
partition: the downstream side of completeness (docs/completeness.md)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from spark_jobs.contract import completeness as cp


def partition_rows(table: str, column: str, key: str, grain: str = "hourly") -> Any:
    """The rows of ``table`` whose ``column`` lies in the partition ``key`` (a pandas frame), and
    the table version read."""
    import pyarrow.dataset as ds
    from deltalake import DeltaTable

    start = datetime.fromtimestamp(cp.key_start(key), UTC)
    end = start + timedelta(seconds=cp.GRAIN_SECONDS[grain])
    dt = DeltaTable(table)
    inside = (ds.field(column) >= start) & (ds.field(column) < end)
    return dt.to_pyarrow_dataset().to_table(filter=inside).to_pandas(), dt.version()


def hourly_sessions(key: str, sessions: str, report: str) -> dict[str, Any]:
    """One row for the hour ``key`` of the sessions table (sessions that ended in it) into the
    ``report`` Delta table, replacing that hour's row: a re-completed hour is reported again."""
    import pyarrow as pa
    from deltalake import write_deltalake

    rows, version = partition_rows(sessions, "session_end", key)
    row = {
        "hour": key,
        "sessions": len(rows),
        "users": int(rows["user_id"].nunique()) if len(rows) else 0,
        "events": int(rows["events"].sum()) if len(rows) else 0,
        "purchases": int(rows["purchased"].sum()) if len(rows) else 0,
        "sessions_version": version,
        "written_at": datetime.now(UTC),
    }
    data = pa.Table.from_pylist([row])
    from spark_jobs.contract import delta

    if delta.exists(report):
        write_deltalake(report, data, mode="overwrite", predicate=f"hour = '{key}'")
    else:
        write_deltalake(report, data, mode="append")
    return {**row, "written_at": row["written_at"].isoformat()}
