"""A Delta table's exactly-once bookkeeping, as the checkpoint commands use it.

Every idempotent writer records ``txn(appId, version)`` in the commit that wrote its batch:
Delta's streaming sink uses the checkpoint's query id and the batch id, our ``foreachBatch``
writers use ``txnAppId``/``txnVersion`` with an app id derived from the same query id. Delta
then skips a batch id at or below the one it has recorded for that app id. Which version
recorded which batch is read by :func:`spark_jobs.contract.delta.txn_log`.
"""

from __future__ import annotations

from spark_jobs.contract import delta
from spark_jobs.contract.errors import UserError


def app_ids(query_id: str) -> tuple[str, ...]:
    """The txn app ids a query with this checkpoint id writes under: the id itself (Delta's
    sink, or a ``foreachBatch`` writer keyed on it) and ``statekeeper-<id>`` (our MERGE)."""
    return (query_id, f"statekeeper-{query_id}")


def version_before_batch(table: str, query_id: str, batch: int) -> tuple[int | None, delta.TxnLog]:
    """The table version to go back to so that every batch after ``batch`` of this query is
    written again: the version just before the first commit that recorded one (None: no such
    commit, the table has nothing to undo). Refused when the JSON commits that would say are
    gone (log retention) or when a later commit was not this query's (restoring would undo it).
    """
    log = delta.txn_log(table)
    if not log.exists:
        return None, log
    apps = app_ids(query_id)
    first = log.first_version_after(apps, batch)
    if first is None:
        if any(log.latest.get(a, -1) > batch for a in apps):
            raise UserError(
                f"table {table}: the commits that wrote batches after {batch} of query {query_id} "
                "are no longer in its log (log retention); restore the table by hand (docs/checkpoints.md)"
            )
        return None, log
    target = first - 1
    if target < 0:
        raise UserError(
            f"table {table} was created by a batch after batch {batch} of "
            f"query {query_id}: there is no earlier version to go back to; move the table aside "
            "(the re-run writes it anew) and run the command again"
        )
    later = [c for c in log.commits if c.version > target]
    foreign = [i for i, c in enumerate(later) if not _ours_or_care(c, apps)]
    if foreign:
        rest = later[foreign[0] :]
        if all(c.operation == "RESTORE" and _restored_to(c) == target for c in rest):
            return None, log  # a restore cut short after the table part already did it
        c = rest[0]
        raise UserError(
            f"table {table} version {c.version} ({c.operation or 'unknown operation'}) was not "
            f"written by query {query_id}; going back to version {target} would undo it; "
            "restore with --keep-tables and follow docs/checkpoints.md by hand"
        )
    return target, log


def _ours_or_care(c: delta.Commit, apps: tuple[str, ...]) -> bool:
    """A commit of this query, or table care that left the rows alone (``table maintain``'s
    compaction, VACUUM, property changes): going back to before it undoes nothing of anyone's."""
    if any(a in c.txns for a in apps):
        return True
    return c.operation in delta.MAINTENANCE_OPERATIONS and not c.changes_rows


def _restored_to(c: delta.Commit) -> int | None:
    v = c.parameters.get("version")
    try:
        return int(v) if v is not None else None
    except (TypeError, ValueError):
        return None
