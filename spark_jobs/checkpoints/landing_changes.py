"""Landing files that changed after their batch read them: lines appended to a file (a producer
that keeps writing to one file, a copy still going when Spark listed it) are never read, because
the file source reads each name once, as the file is when its batch runs.

Spark's file-source log holds each file's modification time as listed (``timestamp``, ms). The
read of a batch starts when the run of it that committed starts: the ``timestamp`` of its
progress record (``<checkpoint>/_statekeeper/progress.jsonl``, the record whose file source
ended at that log batch). A landing file whose modification time is now later than both changed
after that read. A whole copy put in place of a file whose read failed (the run's advice) is
written before the batch runs again, so it is not counted. Where the progress log no longer has
the batch, the commit bounds the read instead: the first ``commits/<N>`` file written after the
log file that names the landing file (batches plan and commit in turn), which misses a change
made while that batch ran.

Local checkpoints and landing folders only, no Spark; a stat per logged file that is still
there, and the progress log read backwards only when a file changed since it was listed:
``checkpoint validate`` warns ``LANDING_FILES_CHANGED``, and ``run`` prints that warning.
"""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass

from spark_jobs.checkpoints.files import read_text
from spark_jobs.checkpoints.layout import Layout
from spark_jobs.checkpoints.unread import file_key, log_entries, shown, source_log_files
from spark_jobs.contract import paths
from spark_jobs.contract.progress_log import BatchProgress, ProgressLog


@dataclass(frozen=True)
class Changed:
    """A logged landing file whose modification time moved since the source listed it."""

    path: str
    source: str  # the file source's folder under ``sources/``
    log_batch: int  # the source log batch that listed it
    mtime: float  # now, epoch seconds
    committed: float | None  # the commit that followed its log file (None: not committed yet)


def changed_after_read(lay: Layout) -> list[str]:
    """Full paths, sorted, of the landing files that changed after their batch read them."""
    candidates = _changed_since_listed(lay)
    if not candidates:
        return []
    starts = _read_starts(lay.uri, {(c.source, c.log_batch) for c in candidates})
    out = set()
    for c in candidates:
        read = starts.get((c.source, c.log_batch), c.committed)
        if read is not None and c.mtime > read:
            out.add(c.path)
    return sorted(out)


def _changed_since_listed(lay: Layout) -> list[Changed]:
    root = paths.local_path(lay.uri)
    if root is None or not lay.commits:
        return []
    commits = sorted(t for b in lay.commits if (t := _mtime(root / "commits" / str(b))))
    out = []
    for source, rels in source_log_files(lay).items():
        for _n, rel in rels:
            planned = _mtime(root / rel)
            at = bisect.bisect_left(commits, planned) if planned else len(commits)
            committed = commits[at] if at < len(commits) else None
            for e in log_entries(read_text(lay.uri, rel)):
                if e.batch is None or e.listed_ms is None:
                    continue
                key = file_key(e.path)
                now = _mtime(key) if os.path.isabs(key) else None
                if now is not None and now * 1000 > e.listed_ms + 1:
                    out.append(Changed(key, source, e.batch, now, committed))
    return out


def _read_starts(checkpoint: str, wanted: set[tuple[str, int]]) -> dict[tuple[str, int], float]:
    """(source, log batch) -> when the run of the batch that read it started, from the newest
    progress records back, until every wanted one is found or the log ends."""
    found: dict[tuple[str, int], float] = {}
    for rec in ProgressLog(checkpoint).backwards():
        if not isinstance(rec, BatchProgress) or rec.time is None:
            continue
        for i, src in enumerate(rec.sources):
            end, begin = _log_offset(src.get("endOffset")), _log_offset(src.get("startOffset"))
            if end is None or end == begin:  # no source log batch of its own: read nothing
                continue
            key = (str(i), end)
            if key in wanted and key not in found:
                found[key] = rec.time
        if len(found) == len(wanted):
            break
    return found


def _log_offset(offset: object) -> int | None:
    value = offset.get("logOffset") if isinstance(offset, dict) else None
    return value if isinstance(value, int) else None


def describe(changed: list[str]) -> str:
    """The finding's message: the count, a few names and what it means (the fix is the
    catalogue's)."""
    return (
        f"{len(changed)} landing file(s) changed after their batch read them: {shown(changed)}; "
        "what was written to them since is never read (each name is read once)"
    )


def _mtime(path: object) -> float | None:
    try:
        return os.stat(str(path)).st_mtime
    except OSError:
        return None
