"""A new checkpoint must not write into a table that other queries already fill.

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


def checkpoint_query(checkpoint: str) -> tuple[str | None, bool]:
    """(query id or None, whether any batch is committed) of a checkpoint, from two reads."""
    from spark_jobs.checkpoints.files import filesystem

    fs, root = filesystem(checkpoint)
    query_id = None
    try:
        query_id = str(json.loads(fs.cat_file(f"{root}/metadata").decode().splitlines()[0])["id"])
    except (FileNotFoundError, OSError, ValueError, KeyError, IndexError):
        query_id = None  # unreadable metadata is the validator's finding, not ours
    commits = f"{root}/commits"
    committed = fs.exists(commits) and any(
        p.rstrip("/").rsplit("/", 1)[-1].isdigit() for p in fs.ls(commits, detail=False)
    )
    return query_id, bool(committed)


def check_table_writer(table: str, checkpoint: str) -> None:
    """Refuse (exit 4) when ``table`` holds streaming writes of other query ids and
    ``checkpoint`` is new to it: no committed batch and its id (if any) never wrote there."""
    log = delta.txn_log(table, every_commit=False)
    if not log.latest:
        return
    query_id, committed = checkpoint_query(checkpoint)
    if query_id and any(a in log.latest for a in delta_txn.app_ids(query_id)):
        return
    if committed:
        return  # an existing checkpoint given a new id (restore, rollback): not a new reader
    app, batch = max(log.latest.items(), key=lambda kv: kv[1])
    raise UserError(
        f"table {table} already holds streaming writes of another query ({app}, up to batch "
        f"{batch}) and checkpoint {checkpoint} is new: it would write every input row again; "
        f"use the table's own checkpoint (or restore one: checkpoint restore), write to a new "
        f"table, or pass {OVERRIDE_FLAG} if the table should get all rows again",
        exit_code=ExitCode.UNSAFE,
    )


def check_outputs(output: str, quarantine: str, checkpoint: str) -> None:
    """The guard for a run's two tables: the job's one query writes both under its query id."""
    check_table_writer(output, checkpoint)
    check_table_writer(quarantine, checkpoint)
