"""How far back a checkpoint can be taken: the batches a rollback still reaches on disk and the
snapshots kept, held against the spec's ``snapshots`` block (``SNAPSHOT_STALE``,
``RECOVERY_WINDOW_UNMET``). Part of ``checkpoint validate``."""

from __future__ import annotations

import time
from typing import Any

from spark_jobs.checkpoints.findings import Report
from spark_jobs.checkpoints.layout import Layout
from spark_jobs.contract.durations import describe


def recovery_window(lay: Layout) -> dict[str, Any]:
    """The oldest batch a rollback can still reach on disk, and its time."""
    restorable = lay.restorable_batches()
    out: dict[str, Any] = {
        "oldest_restorable_batch": None,
        "oldest_restorable_time_ms": None,
        "restorable_batches": len(restorable),
    }
    if restorable:
        b = restorable[0]
        out["oldest_restorable_batch"] = b
        out["oldest_restorable_time_ms"] = (lay.offset_meta.get(b) or {}).get("batchTimestampMs")
    # The mean over the retained range, not the median: catch-up runs come in bursts of batches
    # seconds apart, hours between runs, and the window is about wall-clock time.
    timed = sorted(
        (b, m["batchTimestampMs"]) for b, m in lay.offset_meta.items() if m.get("batchTimestampMs")
    )
    interval = None
    if len(timed) >= 2 and timed[-1][0] > timed[0][0]:
        interval = max(0.0, (timed[-1][1] - timed[0][1]) / 1000 / (timed[-1][0] - timed[0][0]))
    out["mean_batch_interval_s"] = interval
    return out


def check_recovery(lay: Layout, rep: Report, spec: Any, snapshot_root: str | None) -> None:
    window, every, keep = spec.snapshots.recovery_window, spec.snapshots.every, spec.snapshots.keep

    if every:
        from spark_jobs.checkpoints.manifests import newest_valid
        from spark_jobs.contract.paths import default_snapshot_root

        root = snapshot_root or default_snapshot_root(spec.name)
        newest = newest_valid(root)
        age_ckpt = time.time() - lay.files["metadata"].mtime if "metadata" in lay.files else 0.0
        if newest is None and age_ckpt > 2 * every:
            rep.add(
                "SNAPSHOT_STALE",
                f"no snapshot in {root}; the spec asks for one every {describe(every)}",
            )
        elif newest is not None and time.time() - newest["created_ts"] > 2 * every:
            rep.add(
                "SNAPSHOT_STALE",
                f"newest snapshot {newest['id']} is older than twice snapshots.every ({describe(every)})",
            )

    if window:
        by_schedule = every * keep if every and keep else 0.0
        info = recovery_window(lay)
        interval = info["mean_batch_interval_s"]
        by_disk = interval * spec.min_batches_to_retain if interval else None
        if by_disk is not None and max(by_disk, by_schedule) < window:
            need = int(window / interval) + 1 if interval else None
            rep.add(
                "RECOVERY_WINDOW_UNMET",
                f"the spec asks for a recovery window of {describe(window)}; min_batches_to_retain "
                f"{spec.min_batches_to_retain} at one batch per {interval:.0f}s covers {by_disk / 3600:.1f} h "
                f"(needs >= {need}) and snapshots cover {by_schedule / 3600:.1f} h",
            )
        elif by_disk is None and every and keep and by_schedule < window:
            rep.add(
                "RECOVERY_WINDOW_UNMET",
                f"snapshots every {describe(every)} x keep {keep} cover less than the recovery window {describe(window)}",
            )
