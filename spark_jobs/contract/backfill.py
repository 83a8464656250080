"""A backfill's publish policy, and whether a backfill was published: the facts both the backfill
plan (Airflow side) and ``python -m spark_jobs publish`` (Spark side) decide by.

- ``MODES``: ``append`` (events the live runs never processed) or ``replace`` (all events of
  what the backfill covers: the live rows of the covered entities, ``SCOPE``, are replaced).
- ``REFUSED``: where a mode cannot be correct for a job, the one-line reason; plan and publish
  both refuse (:func:`refusal`).
- :func:`published`: the ledger entry ``<live>/_statekeeper/backfills/KEY.json``
  (:func:`spark_jobs.contract.paths.backfill_ledger`), or, between the commit and that file, the
  commit carrying ``MARKER KEY``. Read without Spark (``deltalake``'s log reader).
"""

from __future__ import annotations

import json
from typing import Any

from spark_jobs.contract import delta as delta_log
from spark_jobs.contract import paths

MARKER = "statekeeper-backfill:"
MODES = ("replace", "append")

# The column naming the entities a replace covers: their live rows in the staged time range are
# replaced; every other entity's rows stay (a backfill of user A's events says nothing about B).
SCOPE: dict[str, str] = {
    "sessions": "user_id",
    "fraud_alerts": "user_id",
    "service_health": "service",
    "windowed_counts": "event_type",
    "dedup_events": "user_id",
    "order_payments": "user_id",
}

# Where a mode cannot be correct for a job: the one-line reason (plan and publish both refuse).
REFUSED: dict[tuple[str, str], str] = {
    ("user_counts", "replace"): (
        "user_counts holds lifetime totals per user and a backfill sees only its own folder, so "
        "replace would overwrite them with partial totals; use mode=append for events the live "
        "runs never processed (their counts are added)"
    ),
}


def refusal(job: str, mode: str) -> str | None:
    """Why ``mode`` cannot be correct for ``job``, or None when it can."""
    if mode not in MODES:
        return f"mode must be one of {', '.join(MODES)}, not {mode!r}"
    if (job, mode) in REFUSED:
        return REFUSED[(job, mode)]
    if mode == "replace" and job not in SCOPE:
        return (
            f"{job} has no SCOPE entry in spark_jobs/contract/backfill.py naming the entities a backfill "
            "covers, so replace cannot know which live rows to replace; use mode=append"
        )
    return None


def published(table: str, key: str) -> dict[str, Any] | None:
    """The ledger entry of ``key`` in ``table`` (or the commit marking it), else None."""
    import fsspec

    fs, p = fsspec.core.url_to_fs(paths.backfill_ledger(table, key))
    if fs.exists(p):
        with fs.open(p, "r") as fh:
            return dict(json.load(fh))
    version = marked_version(table, key)
    return None if version is None else {"key": key, "version": version}


def marked_version(table: str, key: str) -> int | None:
    """The version whose commit carries ``key``'s marker, while the log still holds it."""
    for c in delta_log.commits(table):
        if c.user_metadata.startswith(MARKER + key + " "):
            return c.version
    return None
