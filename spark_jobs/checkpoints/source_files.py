"""The landing files a checkpoint's file sources have read, from Spark's own log (no Spark): the
one reader is :func:`spark_jobs.checkpoints.unread.files_read`; this is its by-checkpoint form
for ``publish`` and the backfill plan."""

from __future__ import annotations

from spark_jobs.checkpoints.unread import file_key


def files_read(checkpoint: str) -> set[str]:
    """Every file the checkpoint's file sources logged, spelled by :func:`file_key`."""
    from spark_jobs.checkpoints.layout import read_layout
    from spark_jobs.checkpoints.unread import files_read as logged

    return logged(read_layout(checkpoint, sizes=False)).files


__all__ = ["file_key", "files_read"]
