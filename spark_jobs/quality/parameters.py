"""The run-time values of a suite's $PARAMETERs: the freshness floor (the job's watermark minus the
SLA), the volume bounds (from the trailing runs in the results table) and the quarantine allowance
(the rate times the records read since the last run), each with a note saying where it came from.
"""

from __future__ import annotations

import math
import time
from datetime import datetime
from typing import Any

from spark_jobs.contract import paths
from spark_jobs.contract.durations import describe
from spark_jobs.quality import results
from spark_jobs.quality.suites import (
    P_FRESHNESS_FLOOR,
    P_QUARANTINE_MAX,
    P_VOLUME_MAX,
    P_VOLUME_MIN,
    Suite,
)
from spark_jobs.runtime import progress


def compute(
    spec, suite: Suite, history, uri: str, quarantine_uri: str, full: bool
) -> dict[str, Any]:
    """The run-time values of the suite's $PARAMETERs, and notes saying where they came from."""
    values: dict[str, Any] = {}
    notes: dict[str, str] = {}
    last = progress.last_progress(spec.checkpoint) if _readable(spec.checkpoint) else None
    watermark = _watermark_epoch(last)
    sla = spec.quality.freshness_sla
    if sla is not None:
        ref = watermark if watermark is not None else time.time()
        # Spark hands timestamps to Python as naive local datetimes; compare like with like.
        values[P_FRESHNESS_FLOOR] = datetime.fromtimestamp(ref - sla)
        source = "the job's watermark" if watermark is not None else "the run time"
        for c in suite.checks:
            if c.macro == "freshness":
                notes[c.label] = (
                    f"floor {values[P_FRESHNESS_FLOOR]:%Y-%m-%d %H:%M:%S} = {source} - {describe(sla)}"
                )
    trailing = history.trailing_rows(uri, suite.name, int(suite.volume["trailing_runs"]))
    lo, hi = results.volume_bounds(trailing, suite.volume)
    values[P_VOLUME_MIN], values[P_VOLUME_MAX] = lo, hi
    for c in suite.checks:
        if c.macro == "volume":
            notes[c.label] = (
                f"trailing runs {trailing}; bounds {lo}..{hi if hi is not None else 'none yet'}"
            )
    rate = spec.quality.max_quarantine_rate
    values[P_QUARANTINE_MAX] = None
    read = None
    if rate is not None:
        # Records read since this table's last quality run (either suite), i.e. since the
        # quarantine rows already validated.
        times = [
            history.last_run_time(u, n)
            for u, n in ((uri, suite.name), (quarantine_uri, suite.quarantine_name))
        ]
        since = None if full else max((t for t in times if t is not None), default=None)
        read = _records_read(spec.checkpoint, since)
        if read is None:
            note = (
                f"records read unknown: no progress log under {spec.checkpoint}; rate not bounded"
            )
        else:
            values[P_QUARANTINE_MAX] = int(math.floor(float(rate) * read))
            note = f"allowed {values[P_QUARANTINE_MAX]} = {float(rate):g} x {read} records read (progress.jsonl)"
        for c in suite.checks:
            if c.macro == "quarantine_rate" and c.label.startswith("quarantine: rate"):
                notes[c.label] = note
    return {"values": values, "notes": notes, "read": read}


def _readable(checkpoint: str) -> bool:
    local = paths.local_path(checkpoint)
    return local is None or local.exists()


def _watermark_epoch(record: dict[str, Any] | None) -> float | None:
    wm = ((record or {}).get("eventTime") or {}).get("watermark")
    if not wm:
        return None
    epoch = datetime.fromisoformat(wm.replace("Z", "+00:00")).timestamp()
    return epoch if epoch > 0 else None


def _records_read(checkpoint: str, since: datetime | None) -> int | None:
    """Records the job's query read (numInputRows) since ``since`` (None: ever); None if unknown."""
    if not _readable(checkpoint):
        return None
    records = progress.read_progress(checkpoint)
    if not records:
        return None
    cutoff = since.timestamp() if since is not None else None
    total = 0
    for rec in records:
        logged = float((rec.get("statekeeper") or {}).get("logged_at") or 0)
        if cutoff is None or logged > cutoff:
            total += int(rec.get("numInputRows") or 0)
    return total
