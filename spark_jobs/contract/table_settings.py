"""The Delta table settings of every streaming sink, declared once (docs/tables.md says why).

The job's session creates every new table with them (``spark.databricks.delta.properties.
defaults.*``, :func:`session_defaults`) and ``table maintain`` applies them to existing tables.
``delta.deletedFileRetentionDuration`` comes from the job spec's ``tables.retention``.
"""

from __future__ import annotations

import re

TABLE_PROPERTIES: dict[str, str] = {
    # A Delta checkpoint every 10 commits: a reader replays at most 10 JSON commits, and the
    # log's clean-up (which runs when a checkpoint is written) gets its chance every 10 batches.
    "delta.checkpointInterval": "10",
    # Off: our sinks only append and MERGE whole rows; every reader of the contract (delta-rs,
    # Polars, DuckDB, our own log reader's row counts from file statistics) reads plain files.
    "delta.enableDeletionVectors": "false",
    # One file per table partition per write instead of one per Spark task: a micro-batch adds
    # a file, not shuffle_partitions of them (one shuffle of the batch's few rows).
    "delta.autoOptimize.optimizeWrite": "true",
    # Quality checks read only the rows added since their last run.
    "delta.enableChangeDataFeed": "true",
}
# Never set on a sink: txn entries older than it are dropped at the next log checkpoint, and a
# stopped job's replayed batch would then be written twice (``table maintain`` unsets it).
FORBIDDEN_PROPERTIES = ("delta.setTransactionRetentionDuration",)
RETENTION_PROPERTY = "delta.deletedFileRetentionDuration"
# JSON commits are kept as long as the data files (the retention), not Delta's 30 days: restore,
# rollback and the change feed read no further back than the files (Delta refuses to time-travel
# past the retention), and every listing of the log reads every entry's name. A job committing
# a batch a second adds ~360,000 entries a day (docs/tables.md, "A log of many commits").
LOG_RETENTION_PROPERTY = "delta.logRetentionDuration"
# Delta cleans the log up to the start of the day its retention reaches back into, so a shorter
# log retention than a day keeps nothing less; a day keeps a short-retention test's commits
# when it runs across midnight.
LOG_RETENTION_FLOOR = 86400.0
# Delta's own default for delta.deletedFileRetentionDuration: VACUUM refuses less unless told, and
# time travel (a restore, a quality run's read of the versions since its last) no further back.
DELTA_DEFAULT_RETENTION = 7 * 86400.0
DELTA_LOG_RETENTION = 30 * 86400.0  # Delta's own delta.logRetentionDuration, when unset
SESSION_DEFAULTS_PREFIX = "spark.databricks.delta.properties.defaults."


def interval(seconds: float) -> str:
    """A Delta table-property interval (``interval 604800 seconds``) for ``seconds``."""
    return f"interval {int(-(-seconds // 1))} seconds"


def table_properties(retention_seconds: float) -> dict[str, str]:
    """Every property a sink table of a job with this ``tables.retention`` should have."""
    return {
        **TABLE_PROPERTIES,
        RETENTION_PROPERTY: interval(retention_seconds),
        LOG_RETENTION_PROPERTY: interval(max(retention_seconds, LOG_RETENTION_FLOOR)),
    }


def session_defaults(retention_seconds: float | None = None) -> dict[str, str]:
    """Spark confs that give every table the session creates these properties."""
    props = TABLE_PROPERTIES if retention_seconds is None else table_properties(retention_seconds)
    return {SESSION_DEFAULTS_PREFIX + k.removeprefix("delta."): v for k, v in props.items()}


_UNITS = {
    "second": 1,
    "seconds": 1,
    "minute": 60,
    "minutes": 60,
    "hour": 3600,
    "hours": 3600,
    "day": 86400,
    "days": 86400,
    "week": 604800,
    "weeks": 604800,
}
_INTERVAL = re.compile(r"^\s*interval\s+(\d+(?:\.\d+)?)\s+([a-z]+)\s*$", re.IGNORECASE)


def interval_seconds(text: str | None) -> float | None:
    """Seconds of a Delta interval property (``interval 7 days``); None when unset or unread."""
    m = _INTERVAL.match(text or "")
    if not m or m.group(2).lower() not in _UNITS:
        return None
    return float(m.group(1)) * _UNITS[m.group(2).lower()]
