"""A new checkpoint must not write into a table that other queries already fill, nor a copy of
a checkpoint into a table its twin has moved on.

A new checkpoint is a new query id: Delta's exactly-once bookkeeping (``txn`` per app id, see
``contract.delta``) knows nothing of it, so the query re-reads all its input and appends every row
again. The guard compares the table's txn app ids with the checkpoint's query id (none when the
checkpoint is new); it holds for any writer keyed on that id, Delta's sink or ``foreachBatch``.
"""

from __future__ import annotations

import json

from spark_jobs.checkpoints import delta_txn
from spark_jobs.contract import delta
from spark_jobs.contract.errors import ExitCode, UserError

OVERRIDE_FLAG = "--new-checkpoint-for-existing-table"


def checkpoint_query(checkpoint: str) -> tuple[str | None, int | None, int | None]:
    """(query id, newest planned batch, newest committed batch) of a checkpoint, each None when
    absent, from three reads."""
    from spark_jobs.checkpoints.files import filesystem

    fs, root = filesystem(checkpoint)
    query_id = None
    try:
        query_id = str(json.loads(fs.cat_file(f"{root}/metadata").decode().splitlines()[0])["id"])
    except (FileNotFoundError, OSError, ValueError, KeyError, IndexError):
        query_id = None  # unreadable metadata is the validator's finding, not ours

    def newest(folder: str) -> int | None:
        if not fs.exists(f"{root}/{folder}"):
            return None
        names = (p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(f"{root}/{folder}", detail=False))
        return max((int(n) for n in names if n.isdigit()), default=None)

    return query_id, newest("offsets"), newest("commits")


def check_table_writer(table: str, checkpoint: str) -> None:
    """Refuse (exit 4) when ``table`` holds streaming writes of other query ids and
    ``checkpoint`` is new to it: no committed batch and its id (if any) never wrote there."""
    log = delta.txn_log(table, every_commit=False)
    if not log.latest:
        return
    query_id, planned, committed = checkpoint_query(checkpoint)
    if query_id and any(a in log.latest for a in delta_txn.app_ids(query_id)):
        _check_not_overtaken(table, checkpoint, query_id, log.latest, planned, committed)
        return
    if committed is not None:
        return  # an existing checkpoint given a new id (restore, rollback): not a new reader
    app, batch = max(log.latest.items(), key=lambda kv: kv[1])
    raise UserError(
        f"table {table} already holds streaming writes of another query ({app}, up to batch "
        f"{batch}) and checkpoint {checkpoint} is new: it would write every input row again; "
        f"use the table's own checkpoint (or restore one: checkpoint restore), write to a new "
        f"table, or pass {OVERRIDE_FLAG} if the table should get all rows again",
        exit_code=ExitCode.UNSAFE,
    )


def _check_not_overtaken(
    table: str,
    checkpoint: str,
    query_id: str,
    latest: dict[str, int],
    planned: int | None,
    committed: int | None,
) -> None:
    """Refuse (exit 4) when ``table`` holds a batch of this query id that ``checkpoint`` never
    planned: a copy of the checkpoint (same query id) ran into the table since. Delta would skip
    this checkpoint's next batches up to that id as already written, and their rows (files the
    copy never read) would be lost. A batch planned but not committed (a kill after the write)
    is the exactly-once case and passes: its re-run reads the same input."""
    written = max(latest.get(a, -1) for a in delta_txn.app_ids(query_id))
    if written <= (planned if planned is not None else -1):
        return
    way = (
        f"or make this one take over: checkpoint rollback --checkpoint {checkpoint} "
        f"--to-batch {committed} (the table goes back to before batch {committed + 1} and the "
        "checkpoint gets a new query id)"
        if committed is not None
        else "or move this checkpoint aside"
    )
    raise UserError(
        f"table {table} holds batch {written} of query {query_id}, which checkpoint {checkpoint} "
        f"never planned (its newest batch is {planned}): a copy of this checkpoint wrote the "
        "table since, and Delta would skip this one's next batches as written, losing their rows; "
        f"keep running the copy, {way}",
        exit_code=ExitCode.UNSAFE,
    )


def check_outputs(output: str, quarantine: str, checkpoint: str) -> None:
    """The guard for a run's two tables: the job's one query writes both under its query id."""
    check_table_writer(output, checkpoint)
    check_table_writer(quarantine, checkpoint)
