"""Appending rows to the event log with ``deltalake`` (no Spark: writes never touch a batch's
Spark jobs, and command-line operations that start no Spark session can log too)."""

from __future__ import annotations

import json
from typing import Any

from spark_jobs.contract import events, paths

RETRIES = 3  # the first appends of several writers may race to create the table


def table() -> str:
    return paths.events_table()


def _cell(name: str, value: Any) -> Any:
    if name in ("at", "watermark"):
        return events.to_time(value)
    if name in ("details", "args") and value is not None and not isinstance(value, str):
        return json.dumps(value, default=str, separators=(",", ":"))
    return value


def append(rows: list[dict[str, Any]], txn: tuple[str, int] | None = None) -> None:
    """Append ``rows`` in one commit; ``txn`` = (query id, highest batch id among the rows)
    records which batch rows are in (:func:`spark_jobs.contract.events.written_batch`)."""
    if not rows:
        return
    import pyarrow as pa
    from deltalake import CommitProperties, Transaction, write_deltalake
    from deltalake.exceptions import DeltaError

    schema = events.schema()
    data = pa.Table.from_pylist(
        [{n: _cell(n, r.get(n)) for n in schema.names} for r in rows], schema=schema
    )
    props = None
    if txn is not None:
        props = CommitProperties(app_transactions=[Transaction(events.txn_app(txn[0]), txn[1])])
    last: BaseException | None = None
    for _ in range(RETRIES):
        try:
            write_deltalake(table(), data, mode="append", commit_properties=props)
            return
        except (DeltaError, OSError) as exc:  # a lost race to create the table: try again
            last = exc
    assert last is not None
    raise last
