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
import fcntl
import hashlib
import json
import os
import time
import uuid
from collections.abc import Iterator
from typing import Any

from spark_jobs.checkpoints.layout import STATEKEEPER_DIR, filesystem, read_layout
from spark_jobs.checkpoints.roots import Target
from spark_jobs.errors import UserError
from spark_jobs.runtime import paths
from spark_jobs.runtime.lock import JobLock

MANIFEST = "manifest.json"
FORMAT = 1
_SKIP = {f"{STATEKEEPER_DIR}/{paths.LOCK_FILE}"}  # the lock is a live handle, not content
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
    local.mkdir(parents=True, exist_ok=True)
    fd = os.open(local / "lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(
                f"snapshot store {root} is busy with another snapshot, prune or restore; try again"
            ) from None
        yield
    finally:
        os.close(fd)


def object_path(store_root: str, sha: str) -> str:
    return f"{store_root}/objects/{sha[:2]}/{sha}"


def list_snapshots(root: str) -> list[dict[str, Any]]:
    """Every complete snapshot in the store, newest first (manifest contents)."""
    fs, base = _store(root)
    snap_dir = f"{base}/snapshots"
    if not fs.exists(snap_dir):
        return []
    out = []
    for entry in fs.ls(snap_dir, detail=False):
        try:
            man = json.loads(fs.cat_file(f"{entry.rstrip('/')}/{MANIFEST}"))
        except (FileNotFoundError, ValueError, OSError):
            continue  # an interrupted snapshot: no manifest, not a snapshot
        out.append(man)
    out.sort(key=lambda m: (m.get("created_ts", 0), m.get("id", "")), reverse=True)
    return out


def newest_valid(root: str) -> dict[str, Any] | None:
    return next((m for m in list_snapshots(root) if m.get("valid")), None)


def find_snapshot(root: str, snap_id: str | None) -> dict[str, Any]:
    snaps = list_snapshots(root)
    if not snaps:
        raise UserError(f"no snapshots in {root}; take one with: checkpoint snapshot")
    if snap_id in (None, "latest"):
        valid = [m for m in snaps if m.get("valid")]
        if not valid:
            raise UserError(f"no valid snapshot in {root}; name one with --snapshot ID")
        return valid[0]
    for m in snaps:
        if m["id"] == snap_id:
            return m
    raise UserError(f"no snapshot {snap_id!r} in {root}; list them with: checkpoint snapshots")


def take_snapshot(target: Target, dry_run: bool = False, locked: bool = False) -> dict[str, Any]:
    """Copy ``target.checkpoint`` into the store under the job's lock; returns the manifest summary.

    ``locked``: the caller already holds the job's lock (an flock cannot be taken twice)."""
    from contextlib import nullcontext

    from spark_jobs.checkpoints.validate import validate_checkpoint

    started = time.perf_counter()
    with (
        nullcontext() if locked else JobLock(target.checkpoint, job=target.job, purpose="snapshot"),
        store_lock(target.snapshot_root),
    ):
        lay = read_layout(target.checkpoint)
        if not lay.exists or lay.last_committed is None:
            raise UserError(
                f"checkpoint {target.checkpoint} has no committed batch yet; nothing to snapshot"
            )
        report = validate_checkpoint(target.checkpoint, layout=lay)
        previous = {}
        snaps = list_snapshots(target.snapshot_root)
        if snaps:
            previous = {f["path"]: f for f in snaps[0]["files"]}
        fs_out, store = _store(target.snapshot_root)
        fs_in, ck_root = filesystem(target.checkpoint)
        stored = _object_names(fs_out, store)
        files, new_files, new_bytes, reused = [], 0, 0, 0
        for rel in sorted(lay.files):
            info = lay.files[rel]
            if rel in _SKIP or rel in lay.temp_files:
                continue
            prev = previous.get(rel)
            if (
                prev
                and prev["size"] == info.size
                and prev["mtime"] == info.mtime
                and prev["sha256"] in stored
            ):
                sha = prev["sha256"]
                reused += 1
            elif dry_run:
                sha, added = "", True
                new_files += 1
                new_bytes += info.size
            else:
                sha, added = _store_object(fs_in, f"{ck_root}/{rel}", fs_out, store)
                if added:
                    new_files += 1
                    new_bytes += info.size
            files.append({"path": rel, "size": info.size, "mtime": info.mtime, "sha256": sha})
        now = time.time()
        snap_id = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now)) + f"-b{lay.last_committed}"
        if any(m["id"] == snap_id for m in snaps):
            snap_id += "-" + uuid.uuid4().hex[:6]
        manifest = {
            "format": FORMAT,
            "id": snap_id,
            "job": target.job,
            "checkpoint": target.checkpoint,
            "query_id": lay.query_id,
            "batch": lay.last_committed,
            "uncommitted": lay.uncommitted,
            "batch_time_ms": (lay.offset_meta.get(lay.last_committed) or {}).get(
                "batchTimestampMs"
            ),
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
            "created_ts": now,
            "valid": not report.errors,
            "findings": report.codes,
            "files": files,
            "bytes": sum(f["size"] for f in files),
            "new_files": new_files,
            "new_bytes": new_bytes,
            "reused_files": reused,
        }
        if not dry_run:
            path = f"{store}/snapshots/{snap_id}/{MANIFEST}"
            fs_out.makedirs(f"{store}/snapshots/{snap_id}", exist_ok=True)
            tmp = path + ".tmp"
            with fs_out.open(tmp, "w") as fh:
                json.dump(manifest, fh)
            fs_out.mv(tmp, path)
    summary = {k: v for k, v in manifest.items() if k != "files"}
    summary["files"] = len(files)
    summary["dry_run"] = dry_run
    summary["seconds"] = round(time.perf_counter() - started, 3)
    return summary


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


def _store_object(fs_in: Any, src: str, fs_out: Any, store: str) -> tuple[str, bool]:
    """Hash ``src`` while copying it into the store; (sha256, whether it was new)."""
    tmp = f"{store}/objects/tmp-{uuid.uuid4().hex}"
    fs_out.makedirs(f"{store}/objects", exist_ok=True)
    digest = hashlib.sha256()
    with fs_in.open(src, "rb") as fin, fs_out.open(tmp, "wb") as fout:
        while chunk := fin.read(CHUNK):
            digest.update(chunk)
            fout.write(chunk)
    sha = digest.hexdigest()
    final = object_path(store, sha)
    if fs_out.exists(final):
        fs_out.rm(tmp)
        return sha, False
    fs_out.makedirs(final.rsplit("/", 1)[0], exist_ok=True)
    fs_out.mv(tmp, final)
    return sha, True


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
