"""Landing files that changed after the batch that read them committed: lines appended to a file
(a producer that keeps writing to one file, a copy that was still going when Spark listed it
and finished later) are never read, because the file source reads each name once.

Spark's file-source log holds each file's modification time as listed (``timestamp``, ms). The
batch that read it committed at the modification time of the first ``commits/<N>`` file after
the log file that names it was written (batches plan and commit in turn). A landing file whose
modification time is now later than both changed after that read was final. A file changed
between the listing and the commit is not counted: a whole copy put in place of a file whose
read failed (the run's advice) is read when the batch runs again, before it commits.

Local checkpoints and landing folders only (a stat per logged file that is still there), no
Spark: ``checkpoint validate`` warns ``LANDING_FILES_CHANGED``, and ``run`` prints that warning.
"""

from __future__ import annotations

import bisect
import json
import os

from spark_jobs.checkpoints.layout import Layout
from spark_jobs.checkpoints.unread import file_key, shown, source_log_files
from spark_jobs.contract import paths


def changed_after_read(lay: Layout) -> list[str]:
    """Full paths, sorted, of the landing files that changed after their batch committed."""
    root = paths.local_path(lay.uri)
    if root is None or not lay.commits:
        return []
    commits = sorted(t for b in lay.commits if (t := _mtime(root / "commits" / str(b))))
    out: set[str] = set()
    for rel in (r for rels in source_log_files(lay).values() for _n, r in rels):
        planned = _mtime(root / rel)
        at = bisect.bisect_left(commits, planned) if planned else len(commits)
        if at == len(commits):
            continue  # not committed yet (or the log file went): the next batch may read it
        committed = commits[at]
        for path, listed_ms in _entries((root / rel).read_text(errors="replace")):
            key = file_key(path)
            now = _mtime(key) if os.path.isabs(key) else None
            if now is not None and now * 1000 > listed_ms + 1 and now > committed:
                out.add(key)
    return sorted(out)


def describe(changed: list[str]) -> str:
    """The finding's message: the count, a few names and what to do."""
    return (
        f"{len(changed)} landing file(s) changed after the batch that read them committed: "
        f"{shown(changed)}; what was written to them since is never read (each name is read once)"
    )


def _mtime(path: object) -> float | None:
    try:
        return os.stat(str(path)).st_mtime
    except OSError:
        return None


def _entries(text: str) -> list[tuple[str, float]]:
    """(path, listed modification time in ms) of each file entry of a source log file."""
    out = []
    for line in text.split("\n")[1:]:
        if not line.strip().startswith("{"):
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        path, ts = entry.get("path"), entry.get("timestamp")
        if isinstance(path, str) and isinstance(ts, int | float):
            out.append((path, float(ts)))
    return out
