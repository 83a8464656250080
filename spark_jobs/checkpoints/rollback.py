"""``rollback --to-batch N``: make batch N the checkpoint's last committed batch.

Allowed only when N has both its offset and commit files and every state store can still rebuild
version N + 1 (what a restart after batch N loads). Nothing is deleted: offsets and commits after
N, state versions after N + 1 (a restart would write them again) and, with ``--new-query-id``,
the old ``metadata`` are moved under ``_statekeeper/rollback/<time>/`` with their relative paths.
The file source's own log (``sources/``) is left alone: Spark re-reads the files it logged for the
dropped batches. What this means for a Delta sink is in docs/checkpoints.md.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path
from typing import Any

from spark_jobs.checkpoints.layout import STATEKEEPER_DIR, read_layout
from spark_jobs.checkpoints.restore import local_checkpoint
from spark_jobs.checkpoints.roots import Target
from spark_jobs.checkpoints.validate import validate_checkpoint
from spark_jobs.errors import UserError
from spark_jobs.runtime.lock import JobLock

_STATE_VERSION = re.compile(
    r"^\.?(\d+)(?:_[0-9a-fA-F-]+)?\.(delta|snapshot|changelog|zip)(\.crc)?$"
)
_BATCH = re.compile(r"^\.?(\d+)(\.crc)?$")


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
    target: Target, to_batch: int, new_query_id: bool = False, dry_run: bool = False
) -> dict[str, Any]:
    ck = local_checkpoint(target, "rollback")
    with JobLock(str(ck), job=target.job, purpose="rollback"):
        lay = read_layout(str(ck))
        if not lay.exists or not lay.offsets:
            raise UserError(f"checkpoint {ck} has no batches; nothing to roll back")
        moves = plan_rollback(lay, to_batch)
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
            "dry_run": dry_run,
        }
        if new_query_id:
            result["new_query_id"] = str(uuid.uuid4())
        if dry_run:
            return result
        for rel in moves:
            dest = aside / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            (ck / rel).rename(dest)
        if new_query_id:
            (aside).mkdir(parents=True, exist_ok=True)
            (ck / "metadata").rename(aside / "metadata")
            tmp = ck / ".metadata.rollback.tmp"
            tmp.write_text(json.dumps({"id": result["new_query_id"]}) + "\n")
            tmp.rename(ck / "metadata")
            _drop_crc(ck / ".metadata.crc", aside)
        result["validation"] = validate_checkpoint(str(ck)).to_dict()
    return result


def _drop_crc(crc: Path, aside: Path) -> None:
    # Hadoop's local file system checks a file against its .crc; a rewritten file must lose it.
    if crc.exists():
        crc.rename(aside / crc.name)


def delta_version_of_batch(table: str, app_ids: list[str], batch: int) -> int | None:
    """The Delta table version whose commit recorded ``txn`` (app id, ``batch``), if any.

    Delta's streaming sink (app id = query id) and our idempotent MERGE (``statekeeper-<query
    id>``) both record one; read from the JSON commits, so no Spark is needed.
    """
    from spark_jobs.checkpoints.layout import filesystem

    fs, root = filesystem(table)
    log = f"{root}/_delta_log"
    if not fs.exists(log):
        return None
    found = None
    for path in sorted(fs.glob(f"{log}/*.json")):
        version = int(path.rsplit("/", 1)[-1].split(".")[0])
        for line in fs.cat_file(path).decode().splitlines():
            if '"txn"' not in line:
                continue
            txn = json.loads(line).get("txn") or {}
            if txn.get("appId") in app_ids and int(txn.get("version", -1)) == batch:
                found = version
    return found
