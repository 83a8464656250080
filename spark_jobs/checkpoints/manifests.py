"""A snapshot store's manifests, read: which snapshots it holds and whether their contents can be
trusted. Taking, pruning and restoring snapshots (:mod:`snapshots`, :mod:`restore`) and the
validator's snapshot-age check all read the store through here.

A manifest (``snapshots/<id>/manifest.json``) is written last; a folder without one is an
interrupted snapshot, not a snapshot.

"Newest" means taken last, never "the latest clock reading": the wall clock can step back (NTP,
a VM resumed) and two snapshots can share a second. Each manifest carries ``seq``, one more than
the store's highest when it was taken (under the store's lock), and the order is ``seq``, then
the batch the snapshot holds. Not the batch alone: after a restore or a rollback the checkpoint's
batches count again from an earlier one, and a snapshot of the abandoned batches must not stay
"newest". Manifests written before ``seq`` (0) sort among themselves by batch.
"""

from __future__ import annotations

import json
import re
from typing import Any

from spark_jobs.checkpoints.files import filesystem
from spark_jobs.contract.errors import UserError

MANIFEST = "manifest.json"


def list_snapshots(root: str) -> list[dict[str, Any]]:
    """Every complete snapshot in the store, newest first (manifest contents)."""
    fs, base = filesystem(root)
    snap_dir = f"{base}/snapshots"
    if not fs.exists(snap_dir):
        return []
    out = []
    for entry in fs.ls(snap_dir, detail=False):
        try:
            man = json.loads(fs.cat_file(f"{entry.rstrip('/')}/{MANIFEST}"))
        except (FileNotFoundError, ValueError, OSError):
            continue  # an interrupted snapshot: no manifest, not a snapshot
        check_manifest(man, entry.rstrip("/").rsplit("/", 1)[-1], root)
        out.append(man)
    out.sort(key=order_key, reverse=True)
    return out


def order_key(man: dict[str, Any]) -> tuple[int, int, float, str]:
    """Sort key, oldest first: taken later (``seq``), then more batches, then (only between
    snapshots of old releases taken at the same batch) the clock."""
    return (man.get("seq", 0), man.get("batch", -1), man.get("created_ts", 0.0), man["id"])


def next_seq(snaps: list[dict[str, Any]]) -> int:
    """The ``seq`` of a snapshot taken now into a store holding ``snaps``."""
    return max((m.get("seq", 0) for m in snaps), default=0) + 1


_SNAPSHOT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def safe_relative(path: object) -> bool:
    """A relative path that stays inside the folder it is joined to: no ``..``, no absolute
    path, no empty or ``.`` segment, no backslash or NUL."""
    if not isinstance(path, str) or not path or "\\" in path or "\x00" in path:
        return False
    return not path.startswith("/") and all(p not in ("", ".", "..") for p in path.split("/"))


def check_manifest(man: Any, folder: str, root: str) -> None:
    """Refuse a manifest whose ids or paths could lead outside the store or the checkpoint
    (a manifest is data anyone with write access to the store may have written)."""
    where = f"snapshot manifest {root}/snapshots/{folder}/{MANIFEST}"
    if not isinstance(man, dict):
        raise UserError(f"{where} is not a JSON object; remove that snapshot folder")
    snap_id = man.get("id")
    if not isinstance(snap_id, str) or not _SNAPSHOT_ID.match(snap_id) or snap_id != folder:
        raise UserError(
            f"{where} has id {snap_id!r}, not its folder's name; refusing to use the store "
            "until that snapshot folder is removed"
        )
    # the order keys: a string among ints would break every sort of the store
    for key in ("seq", "batch"):
        if key in man and (not isinstance(man[key], int) or isinstance(man[key], bool)):
            raise UserError(
                f"{where} has a non-integer {key} {man[key]!r}; remove that snapshot folder"
            )
    if not isinstance(man.get("created_ts", 0.0), int | float):
        raise UserError(f"{where} has a non-numeric created_ts; remove that snapshot folder")
    files = man.get("files")
    if not isinstance(files, list):
        raise UserError(f"{where} has no file list; remove that snapshot folder")
    for f in files:
        ok = (
            isinstance(f, dict)
            and safe_relative(f.get("path"))
            and isinstance(f.get("sha256"), str)
            and bool(_SHA256.match(f["sha256"]))
            and isinstance(f.get("size"), int)
            and isinstance(f.get("mtime"), int | float)
        )
        if not ok:
            shown = f.get("path") if isinstance(f, dict) else f
            raise UserError(
                f"{where} lists an unsafe or malformed file {shown!r}; refusing to use the "
                "store until that snapshot folder is removed"
            )


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
