"""The Spark side of completeness: after each committed batch, the partitions it completed.

The runner's progress listener hands every batch's progress here before logging it (Spark posts
progress once the batch, and so its Delta commit, is done). The watermark in that record is the
one the batch ran with, so every row the batch could emit below it is in the table; the rule
and the ledger are :mod:`spark_jobs.contract.completeness`. No Airflow import: the Airflow side
reads the ledger and emits the events.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from spark_jobs.contract import completeness as cp
from spark_jobs.contract import paths
from spark_jobs.contract.spec import JobSpec


def _epoch(iso: Any) -> float | None:
    if not iso:
        return None
    return datetime.fromisoformat(str(iso).replace("Z", "+00:00")).timestamp()


def batch_times(record: dict[str, Any]) -> tuple[float | None, float | None]:
    """(watermark, oldest event time) of one progress record, epoch seconds."""
    et = record.get("eventTime") or {}
    return _epoch(et.get("watermark")), _epoch(et.get("min"))


def oldest_event(checkpoint: str, record: dict[str, Any]) -> float | None:
    """The oldest event time in the progress log and ``record``: a new ledger's origin."""
    from spark_jobs.runtime import progress

    times = [batch_times(r)[1] for r in (*progress.read_progress(checkpoint), record)]
    seen = [t for t in times if t is not None]
    return min(seen) if seen else None


def record_batch(spec: JobSpec, settles_after: float, record: dict[str, Any]) -> cp.Entry | None:
    """Append the partitions the batch of ``record`` completed to the ledger (None: none)."""
    watermark, _ = batch_times(record)
    if watermark is None:
        return None
    entries = cp.read(spec.checkpoint)
    last = entries[-1] if entries else None
    origin = oldest_event(spec.checkpoint, record) if last is None and watermark > 0 else None
    found = cp.newly_complete(last, origin, watermark, settles_after, spec.completeness)
    if found is None:
        return None
    through, keys = found
    batch = record.get("batchId")
    entry = cp.append(
        spec.checkpoint,
        keys,
        through=through,
        batch_id=int(batch) if batch is not None else None,
        watermark=watermark,
    )
    _test_pause(entry.batch_id)
    return entry


# Test-only: after appending the entry of this batch the listener sleeps, so a test can kill the
# run between an entry and its progress line while later batches commit unrecorded
# (tests/e2e/test_completeness_crash.py). Never set in production.
PAUSE_ENV = "STATEKEEPER_TEST_PAUSE_COMPLETENESS_AFTER"


def _test_pause(batch: int | None) -> None:
    if batch is not None and os.environ.get(PAUSE_ENV) == str(batch):
        print(f"statekeeper-test: completeness paused after batch {batch}", file=sys.stderr)
        time.sleep(600)


def record_publish(
    spec: JobSpec, staged: str, key: str, version: int | None, time_column: str
) -> cp.Entry | None:
    """After a backfill's publish into the live table of ``spec``: append the partitions its
    rows touch (by the table's ``time_column``) that were already announced complete to
    ``recompletions.jsonl`` (the others are announced when the watermark passes them). Once per
    publish key, also when run again (a publish killed after its commit is finished by its next
    try, which skips the commit)."""
    if cp.ledger_path(spec.checkpoint) is None:
        return None
    if any(e.publish_key == key for e in cp.read(spec.checkpoint, paths.RECOMPLETIONS_FILE)):
        return None
    done = cp.read(spec.checkpoint)
    if not done:
        return None
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    times = DeltaTable(staged).to_pyarrow_dataset().to_table(columns=[time_column])[time_column]
    bounds = pc.min_max(times)
    lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
    if lo is None:
        return None
    grain = cp.GRAIN_SECONDS[spec.completeness]
    keys = tuple(
        k
        for k in cp.keys_covering(lo.timestamp(), hi.timestamp(), spec.completeness)
        if cp.key_start(k) + grain <= done[-1].through
    )
    if not keys:
        return None
    return cp.append(
        spec.checkpoint, keys, paths.RECOMPLETIONS_FILE, version=version, publish_key=key
    )


def recorder(spec: JobSpec, settles: float) -> Callable[[dict[str, Any]], None] | None:
    """The listener's per-batch hook for ``spec``, whose job's rows settle ``settles`` seconds
    after their partition ends (``JobDef.settles_after``); None for a remote checkpoint: the
    ledger is kept on local ones only."""
    if cp.ledger_path(spec.checkpoint) is None:
        return None

    def on_batch(record: dict[str, Any]) -> None:
        record_batch(spec, settles, record)

    return on_batch


def catch_up(spec: JobSpec, settles: float) -> cp.Entry | None:
    """At a run's start: the entry of the newest committed batch, when a kill lost it
    (``settles``: as for :func:`recorder`).

    The listener sees a batch after its commit, so a kill between the two (or while the
    listener lags the query) leaves batches committed with no entry. The next batch's entry
    would cover them, but Spark runs no batch for a checkpoint with nothing new (it does not
    keep the event time that would move the watermark further), so the hours those batches
    completed would not be announced until new data came. The watermark a committed batch ran
    with is in its offset file: the entry it derives is the one the listener would have
    written (and nothing, when the ledger already has it)."""
    if cp.ledger_path(spec.checkpoint) is None:
        return None
    from spark_jobs.checkpoints.layout import read_layout

    lay = read_layout(spec.checkpoint, parse_tail=2, sizes=False)  # the last offset may be new
    last = lay.last_committed
    wm = (lay.offset_meta.get(last) or {}).get("batchWatermarkMs") if last is not None else None
    if not isinstance(wm, int) or wm <= 0:
        return None
    watermark = datetime.fromtimestamp(wm / 1000, UTC).isoformat()
    record = {"batchId": last, "eventTime": {"watermark": watermark}}
    return record_batch(spec, settles, record)
