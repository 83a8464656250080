"""A new checkpoint whose batch 0 never committed: what batch 0 left is not damage.

Spark writes ``metadata``, ``offsets/0`` and ``sources/<i>/0`` before batch 0 runs, each state
store partition's version 1 when that partition's task ends, and ``commits/0`` last. A run
killed in between leaves version 1 for some partitions and nothing for the others, which is
"partitions missing" to any later look. But with no batch committed no state version is needed
(a restart needs version ``last committed + 1``; with none committed it starts from version 0,
the empty store), and Spark re-runs batch 0 exactly: the same query id (``metadata``), the same
files (``sources/<i>/0``). A table batch 0 already wrote holds Delta's ``txn(query id, 0)`` and
skips the re-run's write; one it had not reached gets it. So the run moves ``state/`` aside
(everything in it is batch 0's) and batch 0 starts again as it first did.

Only when nothing is committed: any commit file, or an offset past 0, means real batches whose
state is needed, and those keep their findings.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from spark_jobs.checkpoints.files import filesystem
from spark_jobs.checkpoints.layout import STATEKEEPER_DIR, Layout, read_layout
from spark_jobs.contract import paths

STATE_DIR = "state"
ASIDE = f"{STATEKEEPER_DIR}/first-batch"  # <stamp>/state: what each cut-short batch 0 left


def cut_short(lay: Layout) -> bool:
    """No batch committed and at most batch 0 planned: everything under ``state/`` is batch 0's."""
    return lay.exists and not lay.commits and set(lay.offsets) <= {0}


def partial_state(lay: Layout) -> list[str]:
    """The files a cut-short batch 0 left under ``state/`` (temp files included); [] otherwise."""
    if not cut_short(lay):
        return []
    return sorted(p for p in lay.files if p.startswith(f"{STATE_DIR}/"))


def clear(checkpoint: str, layout: Layout | None = None) -> dict[str, Any] | None:
    """Move a cut-short batch 0's state aside (never deleted) so the run starts batch 0 afresh.

    The caller holds the job's lock; ``layout`` is the checkpoint's, when the caller has read
    it. Returns what moved and where, or None when there was nothing to clear."""
    lay = layout or read_layout(checkpoint, sizes=False)
    files = partial_state(lay)
    if not files:
        return None
    fs, root = filesystem(checkpoint)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = f"{ASIDE}/{stamp}-{uuid.uuid4().hex[:6]}"  # a fresh folder even within one second
    fs.makedirs(f"{root}/{aside}", exist_ok=True)
    fs.mv(f"{root}/{STATE_DIR}", f"{root}/{aside}/{STATE_DIR}", recursive=True)
    return {"files": len(files), "aside": paths.join(checkpoint, aside)}
