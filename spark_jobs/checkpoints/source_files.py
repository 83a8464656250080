"""The landing files a checkpoint's file sources have read, from Spark's own log (no Spark): the
one reader is :func:`spark_jobs.checkpoints.unread.files_read`; this is its by-checkpoint form
for ``publish``, the backfill plan and the freshness alert."""

from __future__ import annotations

from spark_jobs.checkpoints.layout import SOURCES_DIR
from spark_jobs.checkpoints.unread import file_key
from spark_jobs.contract import paths


def files_read(checkpoint: str) -> set[str]:
    """Every file the checkpoint's file sources logged, spelled by :func:`file_key`. Only the
    ``sources/`` folder is listed: the state files beside it (thousands in a RocksDB
    checkpoint) say nothing about what was read."""
    from spark_jobs.checkpoints.files import list_files
    from spark_jobs.checkpoints.layout import Layout
    from spark_jobs.checkpoints.unread import files_read as logged

    listing = list_files(paths.join(checkpoint, SOURCES_DIR), sizes=False) or {}
    files = {f"{SOURCES_DIR}/{f.path}": f for folder in listing.values() for f in folder.values()}
    return logged(Layout(uri=checkpoint, exists=True, files=files)).files


__all__ = ["file_key", "files_read"]
