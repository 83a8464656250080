"""Every run of a job, not only its live query: the other checkpoints under the checkpoint roots
whose progress log is the job's (a replay on paths of its own, a backfill's isolated checkpoint).
Without them a job whose only runs were such would show "never run" right after it ran."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from spark_jobs.contract import paths
from spark_jobs.contract.progress_log import BatchProgress, ProgressLog
from spark_jobs.contract.spec import JobSpec
from statekeeper import freshness


def _candidates(root: Path) -> list[Path]:
    """Checkpoint folders with a progress log: ``ROOT/*`` and a backfill's ``ROOT/JOB/KEY/checkpoint``."""
    logs = [*root.glob(f"*/{paths.STATEKEEPER_DIR}/{paths.PROGRESS_FILE}")]
    logs += root.glob(f"*/*/checkpoint/{paths.STATEKEEPER_DIR}/{paths.PROGRESS_FILE}")
    return [p.parent.parent for p in logs]


def other_runs(spec: JobSpec, now: float | None = None) -> list[dict[str, Any]]:
    """The job's runs on other checkpoints, newest batch first: checkpoint, last batch, lag."""
    now = time.time() if now is None else now
    live = paths.normalise(spec.checkpoint)
    out = []
    for root in paths.roots("checkpoints"):
        local = paths.local_path(root)
        if local is None or not local.is_dir():
            continue
        for ckpt in _candidates(local):
            if paths.normalise(str(ckpt)) == live:
                continue
            newest = ProgressLog(str(ckpt)).tail(1)  # the newest batch, read from the end
            last = newest[0] if newest else None
            if not isinstance(last, BatchProgress) or last.job != spec.name:
                continue
            wm = last.event_time.get("watermark")
            out.append(
                {
                    "checkpoint": str(ckpt),
                    "last_batch_id": last.batch_id,
                    "last_batch_time": last.time,
                    "watermark": wm,
                    "watermark_lag_seconds": freshness.watermark_lag_seconds(wm, now),
                }
            )
    return sorted(out, key=lambda r: -(r["last_batch_time"] or 0.0))
