"""``restore``: put a snapshot back in place of a checkpoint, atomically, keeping the old one aside.

1. the snapshot is rebuilt in a hidden sibling folder (checksums verified on the way), and
   validated there: a snapshot that would not run is refused before anything moves;
2. under the job's lock (on both folders), the two are swapped: ``renameat2(RENAME_EXCHANGE)``
   on Linux, so there is no instant without a whole checkpoint at the path (elsewhere two
   renames);
3. the old checkpoint is renamed ``<checkpoint>.replaced-<time>`` beside it, never deleted.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

from spark_jobs.checkpoints import snapshots as snapmod
from spark_jobs.checkpoints.roots import Target
from spark_jobs.checkpoints.validate import validate_checkpoint
from spark_jobs.errors import UserError
from spark_jobs.runtime import paths
from spark_jobs.runtime.lock import JobLock

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def local_checkpoint(target: Target, command: str) -> Path:
    local = paths.local_path(target.checkpoint)
    if local is None:
        raise UserError(
            f"{command} needs a local or mounted checkpoint (it swaps folders and takes the lock); {target.checkpoint} is a URL"
        )
    return local


def exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically; False when the kernel or libc cannot (then the caller renames)."""
    libc_name = ctypes.util.find_library("c")
    if not libc_name:
        return False
    libc = ctypes.CDLL(libc_name, use_errno=True)
    fn = getattr(libc, "renameat2", None)
    if fn is None:
        return False
    rc = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return rc == 0


def restore(
    target: Target,
    snap_id: str | None = None,
    dry_run: bool = False,
    force: bool = False,
    new_query_id: bool = False,
) -> dict[str, Any]:
    """Bring snapshot ``snap_id`` (default: the newest valid one) back as ``target.checkpoint``."""
    ck = local_checkpoint(target, "restore")
    man = snapmod.find_snapshot(target.snapshot_root, snap_id)
    if man.get("job") not in (None, target.job) and not force:
        raise UserError(
            f"snapshot {man['id']} is of job {man['job']}, not {target.job}; pass --force if you mean it"
        )
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = ck.with_name(f"{ck.name}.replaced-{stamp}")
    plan = {
        "checkpoint": str(ck),
        "snapshot": man["id"],
        "batch": man["batch"],
        "query_id": man.get("query_id"),
        "files": len(man["files"]),
        "bytes": man["bytes"],
        "old_checkpoint_aside": str(aside) if ck.exists() else None,
        "dry_run": dry_run,
    }
    if dry_run:
        return plan
    ck.parent.mkdir(parents=True, exist_ok=True)
    staged = ck.with_name(f".{ck.name}.restore-{stamp}")
    old_lock = JobLock(str(ck), job=target.job, purpose="restore") if ck.exists() else None
    with snapmod.store_lock(target.snapshot_root):
        if old_lock is not None:
            old_lock.acquire()  # no run may start (or be running) while we build and swap
        try:
            _build(man, target.snapshot_root, staged)
            if new_query_id:  # see docs/checkpoints.md: Delta sinks skip batch ids they have seen
                plan["new_query_id"] = str(uuid.uuid4())
                (staged / ".metadata.crc").unlink(missing_ok=True)
                (staged / "metadata").write_text(json.dumps({"id": plan["new_query_id"]}) + "\n")
            report = validate_checkpoint(str(staged))
            if report.errors and not force:
                shutil.rmtree(staged, ignore_errors=True)
                first = report.errors[0]
                raise UserError(
                    f"snapshot {man['id']} does not validate ([{first.code}] {first.message}); nothing changed; pick another with --snapshot"
                )
            new_lock = JobLock(str(staged), job=target.job, purpose="restore").acquire()
            try:
                if ck.exists():
                    if exchange(staged, ck):
                        staged.rename(aside)  # the old checkpoint now sits at the staged name
                    else:
                        ck.rename(aside)
                        staged.rename(ck)
                else:
                    staged.rename(ck)
                after = validate_checkpoint(str(ck))
            finally:
                new_lock.release()
        except BaseException:
            if staged.exists() and not (ck.exists() and aside.exists()):
                shutil.rmtree(staged, ignore_errors=True)
            raise
        finally:
            if old_lock is not None:
                old_lock.release()
    plan["validation"] = after.to_dict()
    return plan


def _build(man: dict[str, Any], store_root: str, staged: Path) -> None:
    staged.mkdir(parents=True)
    for f in man["files"]:
        dest = staged / f["path"]
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(snapmod.read_object(store_root, f["sha256"]))
        os.utime(dest, (f["mtime"], f["mtime"]))  # the next snapshot's quick check reuses them
