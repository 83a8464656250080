"""The event log's schema and its reader: one Delta table per deployment
(:func:`spark_jobs.contract.paths.events_table`), a row per committed batch and per operation.

Spark-free (``deltalake`` and ``pyarrow``), so the command line's ``events`` and the health API
read it alike. The writer lives in ``spark_jobs.eventlog``; what a row means is said here once.

A ``batch`` row is written once per (``query_id``, ``batch_id``): each append that carries batch
rows records a Delta ``txn`` (app id :func:`txn_app`, version = its highest batch id), so a writer
asks Delta which batches of a query are in, without scanning the table.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from spark_jobs.contract import paths

BATCH = "batch"
LIFECYCLE = ("start", "restart", "stop", "failure")
OPERATIONS = (
    "snapshot",
    "restore",
    "rollback",
    "repartition",
    "upgrade",
    "publish",
    "maintenance",
    "quality",
)
KINDS = (BATCH, *LIFECYCLE, *OPERATIONS)
TXN_PREFIX = "statekeeper-events:"

# (name, arrow type name): typed columns first, the rest of a row's story in ``details`` (JSON).
COLUMNS: tuple[tuple[str, str], ...] = (
    ("kind", "string"),
    ("job", "string"),
    ("checkpoint", "string"),
    ("query_id", "string"),
    ("run_id", "string"),
    ("batch_id", "int64"),
    ("at", "timestamp"),  # the batch's trigger time; when an operation or lifecycle step ended
    ("who", "string"),  # airflow:DAG/RUN/TASK or cli:USER
    ("args", "string"),  # the command line that did it
    ("input_rows", "int64"),
    ("input_rows_per_second", "double"),
    ("processed_rows_per_second", "double"),
    ("duration_ms", "int64"),
    ("state_keys", "int64"),
    ("watermark", "timestamp"),
    ("dropped_by_watermark", "int64"),
    ("output_version", "int64"),  # the Delta version of the output table this batch wrote
    ("quarantine_version", "int64"),
    ("reason", "string"),  # a failure's one line; an operation's verdict
    ("details", "string"),  # JSON: sources (rows, positions), lag, durations, the progress record
)


def schema() -> Any:
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "int64": pa.int64(),
        "double": pa.float64(),
        "timestamp": pa.timestamp("us", tz="UTC"),
    }
    return pa.schema([(name, types[t]) for name, t in COLUMNS])


def txn_app(query_id: str) -> str:
    return f"{TXN_PREFIX}{query_id}"


def to_time(value: Any) -> datetime | None:
    """A datetime (UTC) from epoch seconds, an ISO-8601 string or a datetime; None stays None."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, int | float):
        return datetime.fromtimestamp(float(value), UTC)
    dt = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def default_table() -> str:
    return paths.events_table()


def exists(table: str | None = None) -> bool:
    from spark_jobs.contract import delta

    return delta.exists(table or paths.events_table())


def written_batch(query_id: str, table: str | None = None) -> int | None:
    """The highest batch id of ``query_id`` whose row is in the log (None: none yet)."""
    if not exists(table):
        return None
    from deltalake import DeltaTable

    return DeltaTable(table or paths.events_table()).transaction_version(txn_app(query_id))


def read(
    job: str | None = None,
    since: Any = None,
    until: Any = None,
    kind: str | None = None,
    checkpoint: str | None = None,
    table: str | None = None,
) -> list[dict[str, Any]]:
    """Rows of the log, oldest first (by ``at``, then batch id); [] when there is no log yet.

    ``since``/``until`` (inclusive) are epoch seconds, ISO-8601 strings or datetimes."""
    if not exists(table):
        return []
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    conds = []
    for col, value in (("job", job), ("kind", kind), ("checkpoint", checkpoint)):
        if value is not None:
            conds.append(pc.field(col) == value)
    if since is not None:
        conds.append(pc.field("at") >= to_time(since))
    if until is not None:
        conds.append(pc.field("at") <= to_time(until))
    where = None
    for c in conds:
        where = c if where is None else where & c
    data = DeltaTable(table or paths.events_table()).to_pyarrow_dataset().to_table(filter=where)
    rows: list[dict[str, Any]] = data.to_pylist()
    rows.sort(key=lambda r: (r["at"] or datetime.min.replace(tzinfo=UTC), r["batch_id"] or -1))
    return rows


def details(row: dict[str, Any]) -> dict[str, Any]:
    try:
        out = json.loads(row.get("details") or "{}")
    except ValueError:
        return {}
    return out if isinstance(out, dict) else {}


def progress_records(
    checkpoint: str,
    before: float | None,
    since: float | None = None,
    until: float | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Batch progress records of ``checkpoint`` from the log, older than ``before`` (epoch
    seconds; the oldest record the progress log still holds), oldest first, the newest
    ``limit`` of them: the history the rotated progress log no longer has. A batch whose row
    was re-derived after its progress line was gone has a record of the typed columns only."""
    hi = until if before is None else (before if until is None else min(before, until))
    out = []
    for row in read(kind=BATCH, checkpoint=checkpoint, since=since, until=hi):
        if before is not None and row["at"] is not None and row["at"].timestamp() >= before:
            continue
        out.append(details(row).get("progress") or _record(row))
    return out[-limit:] if limit else out


def _record(row: dict[str, Any]) -> dict[str, Any]:
    """A progress-shaped record from a row's typed columns."""
    at, wm = row["at"], row["watermark"]
    rec: dict[str, Any] = {
        "id": row["query_id"],
        "runId": row["run_id"],
        "batchId": row["batch_id"],
        "timestamp": at.isoformat().replace("+00:00", "Z") if at else None,
        "numInputRows": row["input_rows"],
        "inputRowsPerSecond": row["input_rows_per_second"],
        "processedRowsPerSecond": row["processed_rows_per_second"],
    }
    if row["duration_ms"] is not None:
        rec["durationMs"] = {"triggerExecution": row["duration_ms"]}
    if row["state_keys"] is not None:
        rec["keys"] = {"total": row["state_keys"]}
    if wm is not None:
        rec["eventTime"] = {"watermark": wm.isoformat().replace("+00:00", "Z")}
    return rec
