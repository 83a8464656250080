"""``restore``: put a snapshot back in place of a checkpoint, atomically, keeping the old one aside.

1. the snapshot is rebuilt in a hidden sibling folder (checksums verified on the way), and
   validated there: a snapshot that would not run is refused before anything moves;
2. under the job's lock (on both folders), the two are swapped: ``renameat2(RENAME_EXCHANGE)``
   on Linux, so there is no instant without a whole checkpoint at the path (elsewhere two
   renames);
3. the old checkpoint is renamed ``<checkpoint>.replaced-<time>`` beside it, never deleted.

Before the swap, each query's Delta table goes back to before the batches the restored
checkpoint will re-run, and each query gets a new id (``queries``): the default, because
anything else loses or repeats rows. The tables are the ones the checkpoint is bound to (its
binding, else the snapshot's): the ones the batches after the snapshot went to, whatever the
spec says today.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from spark_jobs.checkpoints import manifests, queries
from spark_jobs.checkpoints import snapshots as snapmod
from spark_jobs.checkpoints.roots import Target
from spark_jobs.checkpoints.validate import validate_checkpoint
from spark_jobs.contract import binding, paths
from spark_jobs.contract.errors import UserError
from spark_jobs.contract.lock import JobLock

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
    keep_tables: bool = False,
    output: str | None = None,
    spark: Any = None,
) -> dict[str, Any]:
    """Bring snapshot ``snap_id`` (default: the newest valid one) back as ``target.checkpoint``.

    By default every query of the job (its own, the quarantine query) comes back safe to re-run
    (``queries``): its table goes back to before the batches after the snapshot's, and its
    checkpoint gets a new id. ``keep_tables`` puts back only the checkpoint, ids and all."""
    ck = local_checkpoint(target, "restore")
    man = manifests.find_snapshot(target.snapshot_root, snap_id)
    if man.get("job") not in (None, target.job) and not force:
        raise UserError(
            f"snapshot {man['id']} is of job {man['job']}, not {target.job}; pass --force if you mean it"
        )
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = ck.with_name(f"{ck.name}.replaced-{stamp}")
    plan: dict[str, Any] = {
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
        with tempfile.TemporaryDirectory() as tmp:
            _put_binding(man, target.snapshot_root, Path(tmp))
            plan.update(_tables(target, output, keep_tables, [ck, Path(tmp)])[1])
        return plan
    ck.parent.mkdir(parents=True, exist_ok=True)
    staged = ck.with_name(f".{ck.name}.restore-{stamp}")
    old_lock = JobLock(str(ck), job=target.job, purpose="restore") if ck.exists() else None
    swapped: list[bool] = []  # set the moment the new checkpoint is in place
    with snapmod.store_lock(target.snapshot_root):
        if old_lock is not None:
            old_lock.acquire()  # no run may start (or be running) while we build and swap
        try:
            build(man, target.snapshot_root, staged)
            report = validate_checkpoint(str(staged))
            if report.errors and not force:
                first = report.errors[0]
                raise UserError(
                    f"snapshot {man['id']} does not validate ([{first.code}] {first.message}); nothing changed; pick another with --snapshot"
                )
            tables, shown = _tables(target, output, keep_tables, [ck, staged])
            plan.update(shown)
            resets = queries.plan_resets(staged, tables)
            plan["queries"] = [r.to_dict() for r in resets]
            if ck.exists() and any(r.table_version is not None for r in resets):
                # Until the swap, the old checkpoint must not run against tables put back.
                queries.mark_pending(ck, "restore")
            queries.restore_tables(resets, spark)
            queries.set_query_ids(staged, resets)
            if tables and binding.bound_tables(str(staged)) is None:
                # A snapshot of an older release names no tables: bind the ones put back.
                out, quarantine = tables[queries.MAIN]
                binding.bind_tables(str(staged), {"output": out, "quarantine": quarantine})
            new_lock = JobLock(str(staged), job=target.job, purpose="restore").acquire()
            try:
                _swap(staged, ck, aside, swapped)
                after = validate_checkpoint(str(ck))
            finally:
                new_lock.release()
        except BaseException:
            if not swapped and staged.exists():
                shutil.rmtree(staged, ignore_errors=True)  # our copy; the checkpoint is untouched
            raise
        finally:
            if old_lock is not None:
                old_lock.release()
    plan["validation"] = after.to_dict()
    return plan


def _tables(
    target: Target, output: str | None, keep_tables: bool, checkpoints: list[Path]
) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """The tables to put back: those the live checkpoint is bound to (where the batches after
    the snapshot went), else the snapshot's; and how the plan shows them."""
    if keep_tables:
        return {}, {"tables": [], "tables_from": ""}
    tables, where = queries.tables_for(target, output, "restore", checkpoints)
    return tables, {
        "tables": sorted({t for ts in tables.values() for t in ts}),
        "tables_from": where,
    }


def _put_binding(man: dict[str, Any], store_root: str, folder: Path) -> None:
    """The snapshot's binding file alone, at its place under ``folder`` (a dry run's look)."""
    rel = f"{paths.STATEKEEPER_DIR}/{paths.BINDING_FILE}"
    for f in man["files"]:
        if f["path"] == rel:
            dest = folder / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(snapmod.read_object(store_root, f["sha256"]))


def _swap(staged: Path, ck: Path, aside: Path, swapped: list[bool]) -> None:
    """Put ``staged`` at ``ck`` and the old checkpoint at ``aside``. There is always a whole
    checkpoint at ``ck``: a fallback cut short between its renames puts the old one back (a
    missing checkpoint would be a new one, and a new query writes every row again)."""
    if not ck.exists():
        staged.rename(ck)
        swapped.append(True)
        return
    if exchange(staged, ck):
        swapped.append(True)
        staged.rename(aside)  # the old checkpoint now sits at the staged name
        return
    ck.rename(aside)
    try:
        staged.rename(ck)
    except BaseException:
        if not ck.exists():
            aside.rename(ck)
        raise
    swapped.append(True)


def build(man: dict[str, Any], store_root: str, staged: Path) -> None:
    """Write snapshot ``man`` out as a checkpoint folder at ``staged`` (which must not exist),
    checking every object's checksum on the way."""
    staged.mkdir(parents=True)
    base = staged.resolve()
    for f in man["files"]:
        if not manifests.safe_relative(f["path"]):
            raise UserError(f"snapshot {man['id']} lists an unsafe path {f['path']!r}")
        dest = staged / f["path"]
        if not dest.resolve().is_relative_to(base):  # the manifest was checked; belt and braces
            raise UserError(f"snapshot {man['id']} path {f['path']!r} leads outside the checkpoint")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(snapmod.read_object(store_root, f["sha256"]))
        os.utime(dest, (f["mtime"], f["mtime"]))  # the next snapshot's quick check reuses them
