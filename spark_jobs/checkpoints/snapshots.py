"""Snapshots: consistent, incremental, content-addressed copies of a checkpoint.

Store layout (any fsspec URL; the default is ``.data/snapshots/<job>``)::

    objects/<2 hex>/<sha256>          each distinct file content once, across all snapshots
    snapshots/<id>/manifest.json      query id, batch, files (path, size, mtime, sha256), totals

A snapshot is taken under the job's lock, so no query writes while it is copied: the copy is the
checkpoint as of its last committed batch. Spark never rewrites a file in place (offsets,
commits, deltas, snapshots, changelogs, zips and SSTs are written once, under new names), so a
file whose path, size and mtime match the previous manifest is not read again: a snapshot costs
what changed since the last one. The manifest is written last; a snapshot without one does not
exist, and its objects go at the next prune.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import stat
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from spark_jobs.checkpoints.files import filesystem, list_files
from spark_jobs.checkpoints.findings import Report
from spark_jobs.checkpoints.layout import STATEKEEPER_DIR, Layout, read_layout
from spark_jobs.checkpoints.manifests import MANIFEST, list_snapshots, next_seq
from spark_jobs.checkpoints.roots import Target
from spark_jobs.contract import paths
from spark_jobs.contract.errors import LockHeld, UserError
from spark_jobs.contract.lock import FileLock, JobLock, holder

FORMAT = 1
# The lock is a live handle, not content; a pending marker belongs to the checkpoint it is in.
_SKIP = {f"{STATEKEEPER_DIR}/{paths.LOCK_FILE}", f"{STATEKEEPER_DIR}/{paths.PENDING_FILE}"}
# A preview's shadow (kept with --keep) is a checkpoint and table of its own, not this one's.
_SKIP_UNDER = f"{STATEKEEPER_DIR}/{paths.PREVIEW_DIR}/"
CHUNK = 1 << 20


def _store(root: str) -> tuple[Any, str]:
    return filesystem(root)


@contextlib.contextmanager
def store_lock(root: str) -> Iterator[None]:
    """Serialise snapshot, prune and restore on one store (a prune must not collect the objects
    of a snapshot being written). Object stores have no flock: there, one scheduler runs these."""
    local = paths.local_path(root)
    if local is None:
        yield
        return
    lock = FileLock(local / "lock")
    try:
        lock.acquire()
    except LockHeld:
        raise UserError(
            f"snapshot store {root} is busy with another snapshot, prune or restore; try again"
        ) from None
    try:
        yield
    finally:
        lock.release()


def object_path(store_root: str, sha: str) -> str:
    return f"{store_root}/objects/{sha[:2]}/{sha}"


def take_snapshot(target: Target, dry_run: bool = False, locked: bool = False) -> dict[str, Any]:
    """Copy ``target.checkpoint`` into the store; returns the manifest summary.

    ``locked``: the caller already holds the job's lock (an flock cannot be taken twice).

    With the job's lock free it is held during the copy (nothing writes meanwhile); while a run
    holds it (a continuous job), the copy is cut at each query's last committed batch (see
    ``live``)."""
    started = time.perf_counter()
    lock: JobLock | None = None
    if not locked:
        lock = JobLock(target.checkpoint, job=target.job, purpose="snapshot")
        try:
            lock.acquire()
        except LockHeld:
            who = holder(target.checkpoint)
            if not who or who.get("purpose") != "run":
                raise  # a restore, rollback or other snapshot: wait for it
            lock = None
    try:
        with store_lock(target.snapshot_root):
            # a caller holding the lock (repartition) has stopped the job: not a live copy
            manifest = _snapshot(target, dry_run, live_run=lock is None and not locked)
    finally:
        if lock is not None:
            lock.release()
    summary = {k: v for k, v in manifest.items() if k != "files"}
    summary["files"] = len(manifest["files"])
    summary["dry_run"] = dry_run
    summary["seconds"] = round(time.perf_counter() - started, 3)
    return summary


# A live copy races Spark's cleanup: when the query deletes files the cut still needed (it ran
# several batches while we copied), the copy is invalid; a fresh cut a moment later is not.
LIVE_ATTEMPTS = 4


def _snapshot(target: Target, dry_run: bool, live_run: bool) -> dict[str, Any]:
    for attempt in range(1, LIVE_ATTEMPTS + 1):
        last = not live_run or attempt == LIVE_ATTEMPTS  # a locked checkpoint is cut once
        manifest = _live_cut(target, dry_run, live_run, last)
        if manifest and (last or dry_run or (manifest["valid"] and manifest["batch"] >= 0)):
            break
    assert manifest is not None  # the last attempt returns one or raises
    if not dry_run:
        fs_out, store = _store(target.snapshot_root)
        path = f"{store}/snapshots/{manifest['id']}/{MANIFEST}"
        fs_out.makedirs(f"{store}/snapshots/{manifest['id']}", exist_ok=True)
        tmp = path + ".tmp"
        with fs_out.open(tmp, "w") as fh:
            json.dump(manifest, fh)
        fs_out.mv(tmp, path)
    return manifest


def _live_cut(target: Target, dry_run: bool, live_run: bool, last: bool) -> dict[str, Any] | None:
    """:func:`_cut`, or None when Spark's cleanup removed a file its checks read (a source log)."""
    try:
        return _cut(target, dry_run, live_run)
    except FileNotFoundError as exc:
        if last:
            raise UserError(
                f"checkpoint {target.checkpoint} changed under every snapshot attempt "
                f"({exc.filename} was removed while it was checked); try again"
            ) from exc
        return None


@dataclass
class _Copied:
    """What one pass over the checkpoint's files stored (or, in a dry run, would store)."""

    files: list[dict[str, Any]] = field(default_factory=list)  # the manifest's file entries
    new_files: int = 0
    new_bytes: int = 0
    reused: int = 0
    vanished: list[str] = field(default_factory=list)  # removed by Spark's cleanup meanwhile


def _cut(target: Target, dry_run: bool, live_run: bool) -> dict[str, Any]:
    """One copy of the checkpoint into the store (objects only) and its manifest, unwritten."""
    from spark_jobs.checkpoints import live
    from spark_jobs.checkpoints.validate import validate_checkpoint

    batches = live.committed_batches(target.checkpoint) if live_run else {}
    listing = list_files(target.checkpoint)  # after the commits: see live's docstring
    if listing is None:
        raise UserError(f"checkpoint {target.checkpoint} does not exist; nothing to snapshot")
    if live_run:
        listing = live.select(listing, batches)
    lay = read_layout(target.checkpoint, listing=listing)
    if lay.last_committed is None:
        raise UserError(
            f"checkpoint {target.checkpoint} has no committed batch yet; nothing to snapshot"
        )
    snaps = list_snapshots(target.snapshot_root)
    copied = _copy_files(target, lay, snaps, dry_run)
    if live_run and not dry_run:
        lay = _as_copied(target, lay, listing, copied)
    report = validate_checkpoint(target.checkpoint, layout=lay)
    return _manifest(target, lay, snaps, copied, live_run, report)


def _copy_files(target: Target, lay: Layout, snaps: list[dict[str, Any]], dry_run: bool) -> _Copied:
    """Store each file of ``lay`` the store does not hold yet (same size and time as in the
    newest snapshot: its object is reused); never follows a link."""
    previous = {f["path"]: f for f in snaps[0]["files"]} if snaps else {}
    fs_out, store = _store(target.snapshot_root)
    fs_in, ck_root = filesystem(target.checkpoint)
    local = paths.local_path(target.checkpoint)
    stored = _object_names(fs_out, store)
    out = _Copied()
    for rel in sorted(lay.files):
        info = lay.files[rel]
        if rel in _SKIP or rel in lay.temp_files or rel.startswith(_SKIP_UNDER):
            continue
        try:
            is_link = local is not None and stat.S_ISLNK(os.lstat(local / rel).st_mode)
        except FileNotFoundError:
            out.vanished.append(rel)  # Spark's cleanup removed an old version meanwhile
            continue
        if is_link:
            raise UserError(
                f"checkpoint {target.checkpoint} holds a symbolic link {rel}; snapshots never "
                "follow links (Spark writes none): replace it with the file it points to"
            )
        prev = previous.get(rel)
        size = info.size
        if (
            prev
            and prev["size"] == info.size
            and prev["mtime"] == info.mtime
            and prev["sha256"] in stored
        ):
            sha = prev["sha256"]
            out.reused += 1
        elif dry_run:
            sha = ""
            out.new_files += 1
            out.new_bytes += info.size
        else:
            try:
                sha, added, size = _store_object(fs_in, f"{ck_root}/{rel}", fs_out, store, local)
            except FileNotFoundError:
                out.vanished.append(rel)  # Spark's cleanup removed an old version meanwhile
                continue
            if added:
                out.new_files += 1
                out.new_bytes += size
        out.files.append({"path": rel, "size": size, "mtime": info.mtime, "sha256": sha})
    return out


def _as_copied(
    target: Target, lay: Layout, listing: dict[str, dict[str, Any]], copied: _Copied
) -> Layout:
    """The layout of what a live copy stored, read back from the store (the folder keeps
    changing): files Spark's cleanup removed meanwhile, and the log remnants their removal
    leaves, are dropped from the copy."""
    from spark_jobs.checkpoints import live

    # Files the first layout read could no longer find were removed by the cleanup too.
    copied.vanished += [
        i.path for e in listing.values() for i in e.values() if i.path not in lay.files
    ]
    remnants = live.cleaned_remnants([f["path"] for f in copied.files], copied.vanished)
    copied.files = [f for f in copied.files if f["path"] not in remnants]
    sha_of = {f["path"]: f["sha256"] for f in copied.files}
    gone = set(copied.vanished) | remnants
    listing = {d: {n: f for n, f in e.items() if f.path not in gone} for d, e in listing.items()}
    return read_layout(
        target.checkpoint,
        listing=listing,
        read=lambda rel: read_object(target.snapshot_root, sha_of[rel]).decode("utf-8"),
    )


def _manifest(
    target: Target,
    lay: Layout,
    snaps: list[dict[str, Any]],
    copied: _Copied,
    live_run: bool,
    report: Report,
) -> dict[str, Any]:
    batch = lay.last_committed if lay.last_committed is not None else -1
    now = time.time()
    snap_id = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now)) + f"-b{batch}"
    if any(m["id"] == snap_id for m in snaps):
        snap_id += "-" + uuid.uuid4().hex[:6]
    return {
        "format": FORMAT,
        "id": snap_id,
        "seq": next_seq(snaps),  # the order (manifests.order_key): the clock can step back
        "job": target.job,
        "checkpoint": target.checkpoint,
        "query_id": lay.query_id,
        "batch": batch,
        "uncommitted": lay.uncommitted,
        "live": live_run,
        "batch_time_ms": (lay.offset_meta.get(batch) or {}).get("batchTimestampMs"),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
        "created_ts": now,
        "valid": not report.errors,
        "findings": report.codes,
        "files": copied.files,
        "bytes": sum(f["size"] for f in copied.files),
        "new_files": copied.new_files,
        "new_bytes": copied.new_bytes,
        "reused_files": copied.reused,
    }


def _object_names(fs: Any, store: str) -> set[str]:
    """The hashes in the store, from one listing (not one existence check per file)."""
    local = paths.local_path(store)
    if local is not None:
        base = local / "objects"
        if not base.is_dir():
            return set()
        return {e.name for d in os.scandir(base) if d.is_dir() for e in os.scandir(d.path)}
    if not fs.exists(f"{store}/objects"):
        return set()
    return {p.rsplit("/", 1)[-1] for p in fs.find(f"{store}/objects")}


def _store_object(
    fs_in: Any, src: str, fs_out: Any, store: str, local: Any = None
) -> tuple[str, bool, int]:
    """Hash ``src`` while copying it into the store; (sha256, whether it was new, bytes).

    A local file is opened with ``O_NOFOLLOW``: a link swapped in after the listing is refused,
    never followed. The size is what was read (a log may grow while it is copied)."""
    tmp = f"{store}/objects/tmp-{uuid.uuid4().hex}"
    fs_out.makedirs(f"{store}/objects", exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    if local is not None:
        try:
            fin = os.fdopen(os.open(src, os.O_RDONLY | os.O_NOFOLLOW), "rb")
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UserError(f"{src} is a symbolic link; snapshots never follow links") from None
            raise
    else:
        fin = fs_in.open(src, "rb")
    with fin, fs_out.open(tmp, "wb") as fout:
        while chunk := fin.read(CHUNK):
            digest.update(chunk)
            fout.write(chunk)
            size += len(chunk)
    sha = digest.hexdigest()
    final = object_path(store, sha)
    if fs_out.exists(final):
        fs_out.rm(tmp)
        return sha, False, size
    fs_out.makedirs(final.rsplit("/", 1)[0], exist_ok=True)
    fs_out.mv(tmp, final)
    return sha, True, size


def read_object(target_root: str, sha: str) -> bytes:
    fs, store = _store(target_root)
    data = fs.cat_file(object_path(store, sha))
    if hashlib.sha256(data).hexdigest() != sha:
        raise UserError(
            f"snapshot object {sha[:12]} in {target_root} is corrupt (checksum mismatch); restore another snapshot"
        )
    return bytes(data)


def plan_prune(
    snaps: list[dict[str, Any]], keep: int, max_age_s: float | None, now: float | None = None
) -> list[dict[str, Any]]:
    """Which snapshots go: beyond the newest ``keep`` or older than ``max_age_s``; never the
    newest valid one."""
    now = time.time() if now is None else now
    protected = next((m["id"] for m in snaps if m.get("valid")), None)
    doomed = []
    for i, m in enumerate(snaps):  # newest first
        too_many = i >= keep
        too_old = max_age_s is not None and now - m.get("created_ts", 0) > max_age_s
        if (too_many or too_old) and m["id"] != protected:
            doomed.append(m)
    return doomed


def prune(
    target: Target, keep: int, max_age_s: float | None, dry_run: bool = False
) -> dict[str, Any]:
    """Delete snapshots by count and age, then the objects no remaining snapshot uses."""
    if keep < 1:
        raise UserError("--keep must be at least 1")
    with store_lock(target.snapshot_root):
        return _prune(target, keep, max_age_s, dry_run)


def _prune(target: Target, keep: int, max_age_s: float | None, dry_run: bool) -> dict[str, Any]:
    snaps = list_snapshots(target.snapshot_root)
    doomed = plan_prune(snaps, keep, max_age_s)
    kept = [m for m in snaps if m not in doomed]
    fs, store = _store(target.snapshot_root)
    used = {f["sha256"] for m in kept for f in m["files"]}
    garbage: list[str] = []
    if fs.exists(f"{store}/objects"):
        for path in fs.find(f"{store}/objects"):  # under the store lock: no snapshot is mid-way
            name = path.rsplit("/", 1)[-1]
            if name not in used:
                garbage.append(path)
    freed = sum(fs.size(p) for p in garbage) if garbage else 0
    if not dry_run:
        # Manifests first: a prune cut short leaves unreferenced objects, never broken snapshots.
        for m in doomed:
            fs.rm(f"{store}/snapshots/{m['id']}", recursive=True)
        for p in garbage:
            fs.rm(p)
    return {
        "snapshot_root": target.snapshot_root,
        "dry_run": dry_run,
        "deleted": [m["id"] for m in doomed],
        "kept": [m["id"] for m in kept],
        "objects_deleted": len(garbage),
        "bytes_freed": freed,
    }
