"""The results table ``<output>/_quality/results`` (Delta; named by
:func:`spark_jobs.contract.paths.results_uri`): one row per expectation per run.

It is also the quality runs' memory: the last validated version of each (table, suite) and the
trailing runs' row counts for the volume check are read back from it.
"""

from __future__ import annotations

import json
import logging
import math
import statistics
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from spark_jobs.contract import delta, paths

log = logging.getLogger(__name__)

RESULTS_SCHEMA = (
    "run_id string, run_time timestamp, job string, table_uri string, suite string, "
    "version_from bigint, version_to bigint, mode string, check string, expectation string, "
    "column_name string, severity string, success boolean, status string, observed string, "
    "unexpected_count bigint, element_count bigint, rows bigint, details string"
)
STATUSES = ("pass", "warn", "fail")
# Each run appends one small file and every run reads the table whole (History): past this many
# files they are merged into one. Unmerged, 1,000 runs made that read 1.2-2.0 s; merged, 0.05 s.
COMPACT_AT_FILES = 32


@dataclass
class ResultRow:
    run_id: str
    run_time: datetime
    job: str
    table_uri: str
    suite: str
    version_from: int | None
    version_to: int
    mode: str
    check: str
    expectation: str
    column_name: str | None
    severity: str
    success: bool
    status: str
    observed: str
    unexpected_count: int | None
    element_count: int | None
    rows: int | None
    details: str

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["run_time"] = self.run_time.isoformat()
        return d


def status_of(success: bool, severity: str) -> str:
    if success:
        return "pass"
    return "fail" if severity == "fail" else "warn"


def format_observed(value: Any, limit: int = 120) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, dict)):
        text = json.dumps(value, default=str)
    else:
        text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class History:
    """What earlier runs recorded for one results table (empty when there is none yet).

    Read once per quality run with ``deltalake`` (no Spark, so small runs need no JVM): per
    (table, suite, run) the versions, run time, mode and row count.
    """

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.runs: list[dict[str, Any]] = []
        if delta.exists(uri):
            from deltalake import DeltaTable

            from spark_jobs.quality.local import naive_local

            cols = ["table_uri", "suite", "run_id", "mode", "version_to", "run_time", "rows"]
            df = naive_local(DeltaTable(uri).to_pyarrow_table(columns=cols).to_pandas())
            runs = df.groupby(["table_uri", "suite", "run_id", "mode"], dropna=False).agg(
                version_to=("version_to", "max"), run_time=("run_time", "max"), rows=("rows", "max")
            )
            self.runs = [
                {k: _plain(v) for k, v in r.items()} for r in runs.reset_index().to_dict("records")
            ]

    def _of(self, table_uri: str, suite: str) -> list[dict[str, Any]]:
        runs = [r for r in self.runs if r["table_uri"] == table_uri and r["suite"] == suite]
        return sorted(runs, key=lambda r: r["run_time"], reverse=True)

    def last_version(self, table_uri: str, suite: str) -> int | None:
        versions = [
            r["version_to"] for r in self._of(table_uri, suite) if r["version_to"] is not None
        ]
        return max(versions) if versions else None

    def last_run_time(self, table_uri: str, suite: str) -> datetime | None:
        runs = self._of(table_uri, suite)
        return runs[0]["run_time"] if runs else None

    def trailing_rows(self, table_uri: str, suite: str, n: int) -> list[int]:
        """New-row counts of the last ``n`` incremental runs of a suite, newest first."""
        runs = [
            r
            for r in self._of(table_uri, suite)
            if r["mode"] == "incremental" and r["rows"] is not None
        ]
        return [int(r["rows"]) for r in runs[: int(n)]]


def volume_bounds(trailing: list[int], options: dict[str, float]) -> tuple[int, int | None]:
    """(min, max) new rows for this run: ``min_ratio``..``max_ratio`` of the trailing median.

    Fewer than ``min_runs`` trailing runs: no bound yet (0, None); the check then passes and its
    row count becomes history for the next run.
    """
    if len(trailing) < int(options["min_runs"]):
        return 0, None
    median = statistics.median(trailing)
    return int(math.floor(median * options["min_ratio"])), int(
        math.ceil(median * options["max_ratio"])
    )


def _plain(value: Any) -> Any:
    """pandas' missing values and numpy scalars as Python's None and numbers."""
    import pandas as pd

    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    if hasattr(value, "to_pydatetime"):
        return value.to_pydatetime()
    return value.item() if hasattr(value, "item") else value


def _arrow_schema() -> Any:
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "bigint": pa.int64(),
        "boolean": pa.bool_(),
        "timestamp": pa.timestamp("us", tz="UTC"),  # Delta's timestamp (Spark's TimestampType)
    }
    return pa.schema(
        [(n, types[t]) for n, t in (c.split(" ", 1) for c in RESULTS_SCHEMA.split(", "))]
    )


def append(output: str, rows: list[ResultRow]) -> str:
    """Append a run's rows to the results table (created on first use) with ``deltalake``, so
    both engines record alike and no JVM is needed; returns its URI."""
    uri = paths.results_uri(output)
    if not rows:
        return uri
    import pyarrow as pa
    from deltalake import write_deltalake

    schema = _arrow_schema()
    data = {n: [getattr(r, n) for r in rows] for n in schema.names}
    # run_time is naive local time (as Spark collects timestamps); Delta stores UTC instants.
    data["run_time"] = [t.astimezone(UTC) for t in data["run_time"]]
    write_deltalake(uri, pa.Table.from_pydict(data, schema=schema), mode="append")
    _compact(uri)
    return uri


def _compact(uri: str) -> None:
    """Merge the results table's files once there are more than ``COMPACT_AT_FILES``, and delete
    the files merged away longer ago than the table's retention (7 days: a reader still on an older
    version keeps its files). The merge's ``add`` actions carry ``dataChange=false``, so "the newest
    run's rows" (the health page) stay the newest data commit's file."""
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError

    dt = DeltaTable(uri)
    if len(dt.file_uris()) <= COMPACT_AT_FILES:
        return
    # Housekeeping after the run's rows are committed: a failure (a concurrent run's commit won,
    # a store error) is a warning, and a later run merges.
    try:
        dt.optimize.compact()
        dt.vacuum(dry_run=False)
    except DeltaError as exc:
        log.warning("quality results %s: files not merged this time (%s)", uri, exc)
