"""Which rows a quality run validates: the Delta versions written since the last validated one.

- append tables: the rows the change data feed reports as inserted in versions
  ``last+1 .. current``, plus any earlier row that shares a key with one of them (so a key written
  again by a later run, the classic exactly-once slip, is caught as a duplicate; on clean data
  that adds no rows);
- upserted tables (``output_mode: update``): the current rows of the keys touched in those
  versions, so "one row per key" is checked against the whole table;
- full mode (``--full``, the first run, or a table without a change feed): the table at its
  current version; also when the versions since the last run are past the table's retention
  (:func:`past_retention`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from spark_jobs.contract import delta
from spark_jobs.contract.errors import UserError
from spark_jobs.contract.table_settings import (
    DELTA_DEFAULT_RETENTION,
    RETENTION_PROPERTY,
    interval_seconds,
)

CDF_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")
NEW_ROW_TYPES = ("insert", "update_postimage")
# Delta's error condition for a change feed read over versions written without one.
MISSING_CHANGE_DATA = "DELTA_MISSING_CHANGE_DATA"
# The slices' mode when the versions since the last run could not be read (past_retention).
PAST_RETENTION = "past retention"
# A version this close to the table's retention is not read in place: a VACUUM may run while the
# checks do (at most half of a retention of seconds, as tests set).
RETENTION_MARGIN = 3600.0


@dataclass
class Slice:
    """The batch a suite validates, and where it came from."""

    df: Any  # pyspark DataFrame
    uri: str
    version_from: int | None  # None: the whole table as of version_to
    version_to: int
    mode: str  # incremental | full | first run | no change feed

    @property
    def versions(self) -> str:
        if self.version_from is None:
            return f"0..{self.version_to}"
        return f"{self.version_from}..{self.version_to}"


def current_version(uri: str) -> int:
    """The table's newest version (no Spark job); a table without commits is a user error."""
    version = delta.version(uri)
    if version is None:
        raise UserError(f"the Delta table at {uri} has no commits; run the job first")
    return version


def past_retention(uri: str, last_version: int, now: float | None = None) -> str | None:
    """Why the versions after ``last_version`` can no longer be read as they were written (one
    line), else None.

    A run reads them through the change feed and, for an append table, the table as of
    ``last_version``. Delta refuses to time-travel further back than the table's
    ``delta.deletedFileRetentionDuration``, a VACUUM may have deleted those versions' files, and
    the log keeps commits for ``delta.logRetentionDuration`` only. A quality run that lagged that
    long (a paused DAG, a holiday) validates the whole table instead of failing every time after.
    """
    commit = delta.commit(uri, last_version)
    if commit is None:
        return f"version {last_version} of {uri} is no longer in its log"
    written_ms = commit.info.get("inCommitTimestamp") or commit.info.get("timestamp")
    if written_ms is None:
        return None
    from deltalake import DeltaTable

    configured = DeltaTable(uri).metadata().configuration.get(RETENTION_PROPERTY)
    retention = interval_seconds(configured) or DELTA_DEFAULT_RETENTION
    age = (time.time() if now is None else now) - float(written_ms) / 1000.0
    if age <= retention - min(RETENTION_MARGIN, retention / 2):
        return None
    kept = configured or "Delta's default of 7 days"
    return (
        f"version {last_version} of {uri} was written {_age(age)} ago, near or past the table's "
        f"file retention ({kept}), after which VACUUM may delete its files"
    )


def made_anew(uri: str, last_run: datetime | None) -> str | None:
    """Why ``uri`` is not the table a run at ``last_run`` validated (one line), else None.

    A table removed and written again (its folder deleted by hand, the quarantine cleared with
    ``rm``, a ``--rebind-tables`` run) numbers its versions from 0 again: "the versions after
    the last validated one" would skip its rows until it passes that number, and a quarantine
    would read as "nothing new", rate 0. Delta records when a table was made (its ``metaData``
    action's ``createdTime``, kept by property changes and ``RESTORE``)."""
    if last_run is None or not delta.exists(uri):
        return None
    from deltalake import DeltaTable

    created_ms = DeltaTable(uri).metadata().created_time
    # run_time is the runner's naive local clock (datetime.now()), as the history reads it back
    if created_ms is None or created_ms / 1000 <= last_run.timestamp():
        return None
    made = datetime.fromtimestamp(created_ms / 1000).strftime("%Y-%m-%d %H:%M:%S")
    return f"{uri} was made anew at {made}, after the last validated run: validated it whole"


def _age(seconds: float) -> str:
    for unit, size in (("days", 86400), ("hours", 3600)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} seconds"


def read_slice(
    spark: Any,
    uri: str,
    last_version: int | None,
    keys: tuple[str, ...] = (),
    upsert: bool = False,
    full: bool = False,
) -> Slice | None:
    """The rows to validate, or None when no version was written since ``last_version``."""
    if not delta.exists(uri):
        raise UserError(f"no Delta table at {uri}; run the job first or pass --output URI")
    version = current_version(uri)
    snapshot = spark.read.format("delta").option("versionAsOf", version).load(uri)
    if full or last_version is None:
        return Slice(snapshot, uri, None, version, "full" if full else "first run")
    if last_version >= version:
        return None
    start = last_version + 1
    from pyspark.errors import AnalysisException

    try:
        new = (
            spark.read.format("delta")
            .option("readChangeFeed", "true")
            .option("startingVersion", start)
            .option("endingVersion", version)
            .load(uri)
            .where(f"_change_type IN {NEW_ROW_TYPES}")
            .drop(*CDF_COLUMNS)
        )
        # Delta looks for the feed when it plans the scan, not at load: plan it here (no job).
        new.rdd.getNumPartitions()
    except AnalysisException as exc:  # no change feed on (some of) these versions: validate it all
        if exc.getCondition() != MISSING_CHANGE_DATA:
            raise
        return Slice(snapshot, uri, None, version, "no change feed")
    if not keys:
        return Slice(new, uri, start, version, "incremental")
    touched = new.select(*keys).distinct()
    if upsert:
        return Slice(
            snapshot.join(touched, list(keys), "left_semi"), uri, start, version, "incremental"
        )
    before = spark.read.format("delta").option("versionAsOf", last_version).load(uri)
    again = before.join(touched, list(keys), "left_semi")
    return Slice(new.unionByName(again), uri, start, version, "incremental")


def empty_quarantine(spark: Any) -> Any:
    from spark_jobs.io.tables import QUARANTINE

    return spark.createDataFrame([], schema=QUARANTINE)
