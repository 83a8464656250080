"""A consistent copy of a checkpoint a running query is writing, without stopping it.

Spark finishes batch N in this order: the file source logs ``sources/<i>/N``, then ``offsets/N``,
then the state stores write version N + 1, the sink commits, and last ``commits/N``. So once
``commits/N`` is seen, everything a restart after batch N needs is already on disk, and a
listing made after that sees it: ``metadata``, offsets and commits up to N, source logs up to N,
every state file up to version N + 1 (with the schema and metadata files and RocksDB's SSTs).
Whatever belongs to later batches (files that appear while we list or copy) is left out, and
a file that vanishes meanwhile (Spark's cleanup of old versions) is skipped; the copy is then
validated as it is. Each query checkpoint of the job (its own, ``_statekeeper/quarantine``) is
cut at its own last committed batch.
"""

from __future__ import annotations

from spark_jobs.checkpoints.files import FileInfo, filesystem
from spark_jobs.checkpoints.layout import (
    BATCH_NAME,
    SOURCE_LOG_NAME,
    SOURCES_DIR,
    STATE_VERSION_NAME,
)
from spark_jobs.checkpoints.queries import MAIN, QUARANTINE
from spark_jobs.contract import paths

QUERIES = (MAIN, QUARANTINE)


def committed_batch(checkpoint: str) -> int | None:
    """The newest ``commits/N`` of a query checkpoint (one listing), or None."""
    fs, root = filesystem(checkpoint)
    if not fs.exists(f"{root}/commits"):
        return None
    names = [p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(f"{root}/commits", detail=False)]
    batches = [int(n) for n in names if n.isdigit()]
    return max(batches) if batches else None


def committed_batches(checkpoint: str) -> dict[str, int | None]:
    """Each query's last committed batch; read before the listing the copy is made from."""
    return {q: committed_batch(paths.join(checkpoint, q) if q else checkpoint) for q in QUERIES}


def keep(rel: str, batch: int | None) -> bool:
    """Whether ``rel`` (relative to its query checkpoint) belongs to the copy at ``batch``."""
    n = -1 if batch is None else batch
    parts = rel.split("/")
    name = parts[-1]
    if name.endswith(".tmp"):
        return False  # a write in progress
    if parts[0] in ("offsets", "commits") and len(parts) == 2:
        m = BATCH_NAME.match(name)
        return m is not None and int(m.group(1)) <= n
    if parts[0] == SOURCES_DIR and len(parts) == 3:
        m = SOURCE_LOG_NAME.match(name)
        return m is not None and int(m.group(1)) <= n
    if parts[0] == "state":
        m = STATE_VERSION_NAME.match(name)
        return m is None or int(m.group(1)) <= n + 1  # batch N commits state version N + 1
    return True


def select(
    listing: dict[str, dict[str, FileInfo]], batches: dict[str, int | None]
) -> dict[str, dict[str, FileInfo]]:
    """The part of ``listing`` (``files.list_files``) that the copy at ``batches`` holds."""
    out: dict[str, dict[str, FileInfo]] = {}
    for folder, entries in listing.items():
        for name, info in entries.items():
            query, inner = _query_of(info.path)
            if query is None or keep(inner, batches.get(query)):
                out.setdefault(folder, {})[name] = info
    return out


def _query_of(rel: str) -> tuple[str | None, str]:
    """(query checkpoint, path inside it), or (None, rel) for Statekeeper's own files."""
    if rel.startswith(QUARANTINE + "/"):
        return QUARANTINE, rel[len(QUARANTINE) + 1 :]
    if rel.split("/", 1)[0] == paths.STATEKEEPER_DIR:
        return None, rel
    return MAIN, rel


def cleaned_remnants(copied: list[str], vanished: list[str]) -> set[str]:
    """Log files of the copy that Spark's cleanup had already passed while we copied.

    Cleanup deletes a log's oldest batches in order, so when ``offsets/7`` vanished mid-copy,
    ``offsets/6`` (copied a moment before) is a remnant: keeping it would leave a gap (6, 8, 9)
    where a restart needs a contiguous run of batches ending at the last commit."""
    newest_gone: dict[str, int] = {}
    for rel in vanished:
        found = _log_batch(rel)
        if found:
            newest_gone[found[0]] = max(found[1], newest_gone.get(found[0], -1))
    drop = set()
    for rel in copied:
        found = _log_batch(rel)
        if found and found[0] in newest_gone and found[1] < newest_gone[found[0]]:
            drop.add(rel)
    return drop


def _log_batch(rel: str) -> tuple[str, int] | None:
    """(log folder, batch) for a file of a batch log (offsets, commits, a source log)."""
    query, inner = _query_of(rel)
    parts = inner.split("/")
    if parts[0] in ("offsets", "commits") and len(parts) == 2:
        m = BATCH_NAME.match(parts[-1])
    elif parts[0] == SOURCES_DIR and len(parts) == 3:
        m = SOURCE_LOG_NAME.match(parts[-1])
    else:
        return None
    return (rel.rsplit("/", 1)[0], int(m.group(1))) if m else None
