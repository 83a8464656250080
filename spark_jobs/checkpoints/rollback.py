"""``rollback --to-batch N``: make batch N the checkpoint's last committed batch.

Allowed only when N has both its offset and commit files and every state store can still rebuild
version N + 1 (what a restart after batch N loads). Nothing is deleted: offsets and commits after
N, state versions after N + 1 (a restart would write them again) and the old ``metadata`` (the
query gets a new id, see ``queries``) are moved under ``_statekeeper/rollback/<time>/`` with their relative paths.
The file source's own log (``sources/``) is left alone: Spark re-reads the files it logged for the
dropped batches. What this means for a Delta sink is in docs/checkpoints.md.
"""

from __future__ import annotations

import time
from typing import Any

from spark_jobs.checkpoints import queries
from spark_jobs.checkpoints.layout import (
    BATCH_NAME,
    STATE_VERSION_NAME,
    STATEKEEPER_DIR,
    read_layout,
)
from spark_jobs.checkpoints.restore import local_checkpoint
from spark_jobs.checkpoints.roots import Target
from spark_jobs.checkpoints.validate import validate_checkpoint
from spark_jobs.contract.errors import UserError
from spark_jobs.contract.lock import JobLock

_STATE_VERSION = STATE_VERSION_NAME
_BATCH = BATCH_NAME


def plan_rollback(lay: Any, to_batch: int) -> list[str]:
    """Relative paths to move aside, or a UserError saying why batch ``to_batch`` is out of reach."""
    if to_batch not in lay.commits or to_batch not in lay.offsets:
        have = lay.restorable_batches()
        span = f"{have[0]}..{have[-1]}" if have else "none"
        raise UserError(
            f"batch {to_batch} is not a committed batch on disk (offset and commit); restorable batches: {span}"
        )
    broken = [s.key for s in lay.data_stores() if to_batch + 1 not in s.reachable()]
    if broken:
        have = lay.restorable_batches()
        span = f"{have[0]}..{have[-1]}" if have else "none"
        raise UserError(
            f"state version {to_batch + 1} for batch {to_batch} is no longer on disk for {broken[0]}; restorable batches: {span}; restore a snapshot instead"
        )
    moves = []
    for rel in lay.files:
        parts = rel.split("/")
        if parts[0] == STATEKEEPER_DIR:
            continue
        name = parts[-1]
        if parts[0] in ("offsets", "commits") and len(parts) == 2:
            m = _BATCH.match(name)
            if m and int(m.group(1)) > to_batch:
                moves.append(rel)
        elif parts[0] == "state":
            m = _STATE_VERSION.match(name)
            if m and "SSTs" not in parts and int(m.group(1)) > to_batch + 1:
                moves.append(rel)
    return sorted(moves)


def rollback(
    target: Target,
    to_batch: int,
    dry_run: bool = False,
    keep_tables: bool = False,
    output: str | None = None,
    spark: Any = None,
) -> dict[str, Any]:
    """Make ``to_batch`` the job query's last committed batch. By default its output table goes
    back to before the batches after it and the checkpoint gets a new query id (``queries``);
    ``keep_tables`` moves only the checkpoint's files. The job's query writes its output and
    quarantine, so both go back; a separate quarantine query of an earlier release is not rolled
    back: it has kept every bad record once already."""
    ck = local_checkpoint(target, "rollback")
    with JobLock(str(ck), job=target.job, purpose="rollback"):
        # The tables the checkpoint is bound to: where the batches rolled back went.
        tables, tables_from = (
            ({}, "") if keep_tables else queries.tables_for(target, output, "rollback")
        )
        tables = {k: v for k, v in tables.items() if k == queries.MAIN}
        lay = read_layout(str(ck))
        if not lay.exists or not lay.offsets:
            raise UserError(f"checkpoint {ck} has no batches; nothing to roll back")
        moves = plan_rollback(lay, to_batch)
        resets = queries.plan_resets(ck, tables, batches={queries.MAIN: to_batch})
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        aside = ck / STATEKEEPER_DIR / "rollback" / stamp
        result: dict[str, Any] = {
            "checkpoint": str(ck),
            "to_batch": to_batch,
            "last_committed_before": lay.last_committed,
            "query_id": lay.query_id,
            "moved": len(moves),
            "moved_batches": sorted(
                {
                    int(p.split("/")[1].lstrip(".").split(".")[0])
                    for p in moves
                    if p.startswith(("offsets/", "commits/"))
                }
            ),
            "aside": str(aside),
            "queries": [r.to_dict() for r in resets],
            "tables_from": tables_from,
            "dry_run": dry_run,
        }
        if resets:
            result["new_query_id"] = resets[0].new_query_id
        if dry_run:
            return result
        if any(r.table_version is not None for r in resets):
            queries.mark_pending(ck, "rollback")
        queries.restore_tables(resets, spark)
        for rel in moves:
            dest = aside / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            (ck / rel).rename(dest)
        queries.set_query_ids(ck, resets, aside)
        queries.clear_pending(ck)
        result["validation"] = validate_checkpoint(str(ck)).to_dict()
    return result
