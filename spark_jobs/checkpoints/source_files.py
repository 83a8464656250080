"""The landing files a checkpoint's file sources have read, from Spark's own log (no Spark): the
one reader is :func:`spark_jobs.checkpoints.unread.files_read`; this is its by-checkpoint form
for ``publish``, the backfill plan and the freshness alert, and :func:`read_before`, the one rule
of what a backfill's ``append`` may not add again."""

from __future__ import annotations

import filecmp
import os

from spark_jobs.checkpoints.layout import SOURCES_DIR
from spark_jobs.checkpoints.unread import file_key
from spark_jobs.contract import paths


def files_read(checkpoint: str) -> set[str]:
    """Every file the checkpoint's file sources logged, spelled by :func:`file_key`."""
    return set(files_logged(checkpoint))


def files_logged(checkpoint: str) -> dict[str, float | None]:
    """Every file the checkpoint's file sources logged (:func:`file_key`) -> its modification
    time (ms) when listed. Only the ``sources/`` folder is listed: the state files beside it
    (thousands in a RocksDB checkpoint) say nothing about what was read."""
    from spark_jobs.checkpoints.files import list_files
    from spark_jobs.checkpoints.layout import Layout
    from spark_jobs.checkpoints.unread import files_read as logged

    listing = list_files(paths.join(checkpoint, SOURCES_DIR), sizes=False) or {}
    files = {f"{SOURCES_DIR}/{f.path}": f for folder in listing.values() for f in folder.values()}
    return logged(Layout(uri=checkpoint, exists=True, files=files)).listed_ms


def kind_of(file: str, inputs: dict[str, str] | None) -> str:
    """The input kind whose folder holds ``file`` (a :func:`file_key`); "" when none does or
    the inputs are not known (a checkpoint of a release before they were recorded)."""
    folder = os.path.dirname(file)
    for kind, uri in (inputs or {}).items():
        if file_key(uri).rstrip("/") == folder:
            return kind
    return ""


def read_before(
    live_checkpoint: str, live_inputs: dict[str, str] | None, files: dict[str, str]
) -> list[str]:
    """Of ``files`` (a backfill's, :func:`file_key` -> the kind it is read as, "" unknown), those
    the live checkpoint's file sources read already: the same path, or a copy of a file of the
    same name read as the same kind (:func:`_copy_of`). The live job reads each name of its
    folder once, so that is where a copy of what it read is looked for."""
    logged = files_logged(live_checkpoint)
    folders = tuple(u for u in (live_inputs or {}).values() if paths.local_path(u) is not None)
    by_name: dict[str, list[tuple[str, str]]] = {}  # name -> (key, kind) of the files it read
    for key in logged:
        by_name.setdefault(os.path.basename(key), []).append((key, kind_of(key, live_inputs)))
    out = []
    for f, kind in files.items():
        twins = [
            key
            for key, its in by_name.get(os.path.basename(f), [])
            if not kind or not its or its == kind
        ]
        if f in logged or any(_copy_of(f, key, logged[key], folders) for key in twins):
            out.append(f)
    return sorted(out)


def _copy_of(path: str, read: str, read_ms: float | None, folders: tuple[str, ...]) -> bool:
    """Whether the local file ``path`` is the file ``read`` the live job read (``read_ms``, its
    modification time then): the same file under another path (a link), the same bytes while
    that file is still there (a copy), or the same modification time to the millisecond (a copy
    that kept it: ``cp -p``, ``rsync -t``, ``tar x``, a restore from an archive). A file merely
    sharing a name (the project's ``generate`` numbers its files per folder) is none of these.
    ``read`` comes from a checkpoint's log: it is opened only inside a landing root or one of the
    live job's ``folders``."""
    if paths.local_path(path) is None or not os.path.isfile(path):
        return False  # a store's object: by path only
    try:
        mtime_ms = os.stat(path).st_mtime_ns // 1_000_000  # Hadoop's: whole milliseconds
        if read_ms is not None and mtime_ms == int(read_ms):
            return True
        if os.path.isfile(read) and paths.outside_roots(read, "landing", extra=folders) is None:
            return os.path.samefile(path, read) or filecmp.cmp(path, read, shallow=False)
    except OSError:
        return False  # gone or unreadable since the folder was listed
    return False


__all__ = ["file_key", "files_logged", "files_read", "kind_of", "read_before"]
