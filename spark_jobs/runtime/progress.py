"""Every micro-batch's StreamingQueryProgress as one JSON line in ``_statekeeper/progress.jsonl``.

Readable without Spark: :func:`read_progress` is what the checkpoint tools, quality checks and the
Airflow supervisor use.

Since Spark 3.5 a continuous query with no new data reports ``onQueryIdle`` instead of empty
progress, so without more a caught-up job would look stalled. The listener logs those as
``{"event": "idle", ...}`` lines, at most one per query per ``IDLE_LOG_EVERY`` seconds (idle
events come every 10 s, forever). A batch that runs long is no stall either: while a trigger runs,
the runner appends a ``{"event": "heartbeat", ...}`` line every ``heartbeat_every()`` seconds
saying how long the batch has run. Readers get batch progress only unless they ask for these
event records too (the supervisor's health check does).

The log is rotated by size: past ``max_bytes()`` the file becomes ``progress.jsonl.1`` (older
ones shift to ``.2`` ... ``.KEEP_ROTATED``, the oldest goes) and a new one starts. Reading is the
contract's, one reader for both sides (:class:`spark_jobs.contract.progress_log.ProgressLog`,
rotation-aware, typed records); ``read_progress`` and ``last_progress`` here are that reader's
records as logged (``raw``), for the Spark-side callers that still take dicts.

A batch reading Kafka also gets a top-level ``lag`` object: per topic, records behind the
topic's latest offsets (spark_jobs.contract.lag).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spark_jobs.contract import paths
from spark_jobs.contract.lag import source_lag
from spark_jobs.contract.progress_log import (
    HEARTBEAT,
    IDLE,
    KEEP_ROTATED,
    BatchProgress,
    ProgressLog,
    log_uri,
    rotated,
)
from spark_jobs.runtime import event_time_stats

IDLE_LOG_EVERY = 60.0  # seconds; well below the supervisor's stalled limit (5 minutes)
HEARTBEAT_EVERY_ENV = "STATEKEEPER_HEARTBEAT_SECONDS"
MAX_BYTES_ENV = "STATEKEEPER_PROGRESS_MAX_BYTES"
_WRITE = threading.Lock()  # the listener's thread and the runner's heartbeat share one file
# Called on the listener's thread when a logged query starts, (checkpoint, query id, run id), and
# after each batch record is logged, (checkpoint, record): the event log's writer subscribes.
ON_START: list[Callable[[str, str, str], None]] = []
ON_BATCH: list[Callable[[str, dict[str, Any]], None]] = []


def heartbeat_every() -> float:
    """Seconds between heartbeats of a running batch (default 30, far below the stalled limit)."""
    return float(os.environ.get(HEARTBEAT_EVERY_ENV) or 30.0)


def max_bytes() -> int:
    """Size past which the progress log is rotated (default 16 MB)."""
    return int(os.environ.get(MAX_BYTES_ENV) or 16_000_000)


# Key-level metrics of a batch, left by the batch writer (driver side) for the listener, which
# adds them to that batch's record as top-level "keys": (query name, batch id) -> counts.
_KEYS: dict[tuple[str, int], dict[str, int]] = {}
_KEYS_LOCK = threading.Lock()


def put_keys(name: str, batch_id: int, counts: dict[str, int]) -> None:
    with _KEYS_LOCK:
        _KEYS[(name, int(batch_id))] = dict(counts)


def last_keys_total(checkpoint: str) -> int:
    """Keys held after the newest logged batch that counted them (0 for a new checkpoint)."""
    for rec in ProgressLog(checkpoint).backwards():  # newest first: stops at the first found
        if isinstance(rec, BatchProgress) and rec.keys is not None and rec.keys.total is not None:
            return rec.keys.total
    return 0


def pop_keys(name: str, batch_id: int) -> dict[str, int] | None:
    with _KEYS_LOCK:
        return _KEYS.pop((name, int(batch_id)), None)


def progress_path(checkpoint: str) -> str:
    return log_uri(checkpoint)


def append_line(target: str, record: dict[str, Any]) -> None:
    line = json.dumps(record, separators=(",", ":"), default=str) + "\n"
    local = paths.local_path(target)
    if local is not None:
        local.parent.mkdir(parents=True, exist_ok=True)
        with _WRITE:
            if local.exists() and local.stat().st_size + len(line) > max_bytes():
                _rotate(local)
            with open(local, "a", encoding="utf-8") as fh:
                fh.write(line)
        return
    import fsspec

    with fsspec.open(target, "a", encoding="utf-8") as fh:  # object stores: append = rewrite
        fh.write(line)


def _rotate(local: Path) -> None:
    """progress.jsonl -> .1 -> .2 ...; the oldest beyond KEEP_ROTATED is dropped."""
    for n in range(KEEP_ROTATED - 1, 0, -1):
        older = rotated(local, n)
        if older.exists():
            os.replace(older, rotated(local, n + 1))
    os.replace(local, rotated(local, 1))


def is_batch(record: dict[str, Any]) -> bool:
    """A micro-batch's progress (not an idle or heartbeat record)."""
    return "event" not in record


def read_progress(checkpoint: str, idle: bool = False) -> list[dict[str, Any]]:
    """All batch progress records of a checkpoint, oldest first ([] when none yet); with
    ``idle``, the idle and heartbeat records too."""
    return [r.raw for r in ProgressLog(checkpoint).forwards() if idle or is_batch(r.raw)]


def make_listener(
    job: str,
    targets: dict[str, str],
    on_batch: Callable[[dict[str, Any]], None] | None = None,
):  # -> StreamingQueryListener
    """A listener writing each progress of the named queries to its progress file.

    ``on_batch`` sees each record first (spark_jobs.completeness): whoever finds the batch's
    progress line can count on what the hook wrote for it.

    ``targets`` maps a query name to the checkpoint whose progress log it writes. Each source is
    scanned once per batch (the runner's plan reads its one shuffle twice, not the source), so
    Spark's input counts are lines read as they are.
    """
    from pyspark.sql.streaming import StreamingQueryListener

    names: dict[str, str] = {}  # query id -> name (idle events carry only the id)
    last_idle: dict[str, float] = {}

    class ProgressLog(StreamingQueryListener):
        def onQueryStarted(self, event: Any) -> None:
            names[str(event.id)] = event.name or ""
            for call in ON_START if (event.name or "") in targets else ():
                call(targets[event.name or ""], str(event.id), str(event.runId))

        def onQueryProgress(self, event: Any) -> None:
            self.log_progress(event.progress.json)

        def log_progress(self, progress_json: str) -> None:
            """The batch's record, from the JSON Spark writes for its progress."""
            progress = json.loads(progress_json)
            event_time_stats.restore(progress)
            checkpoint = targets.get(progress.get("name") or "")
            if checkpoint is None:
                return
            progress["statekeeper"] = {"job": job, "logged_at": time.time()}
            keys = pop_keys(progress.get("name") or "", int(progress.get("batchId", -1)))
            if keys is not None:
                progress["keys"] = keys
            lag = source_lag(progress)
            if lag:  # Kafka sources: records behind the topic's end, per topic and partition
                progress["lag"] = lag
            if on_batch is not None:
                on_batch(progress)
            append_line(progress_path(checkpoint), progress)
            for call in ON_BATCH:
                call(checkpoint, progress)

        def onQueryIdle(self, event: Any) -> None:
            qid = str(event.id)
            checkpoint = targets.get(names.get(qid, ""))
            if checkpoint is None:
                return
            now = time.time()
            if now - last_idle.get(qid, 0.0) < IDLE_LOG_EVERY:
                return
            last_idle[qid] = now
            record = idle_record(names[qid], qid, str(event.runId), event.timestamp, job, now)
            append_line(progress_path(checkpoint), record)

        def onQueryTerminated(self, event: Any) -> None:
            pass

        @property
        def _jlistener(self) -> Any:
            """What ``spark.streams.addListener`` registers (PySpark's hook): see
            :class:`_ProgressAsJson`."""
            java = getattr(self, "_java", None)
            if java is None:
                from pyspark import SparkContext

                jvm: Any = SparkContext._jvm
                java = self._java = jvm.PythonStreamingQueryListenerWrapper(_ProgressAsJson(self))
            return java

    return ProgressLog()


class _ProgressAsJson:
    """Spark's listener interface for Python (called through py4j), as PySpark implements it
    but for one event: a batch's progress reaches the listener as the JSON Spark writes for it,
    one call into the JVM. PySpark first builds its ``StreamingQueryProgress`` field by field
    (``fromJObject``: a round trip per field, per source and per state operator), which took
    0.35 to 0.5 s of the listener's thread per batch, measured on a small run; the record
    itself, ``.json``, is that same JSON. Every record landed that much later, and the end of
    every run, which waits for its last record, waited for it."""

    def __init__(self, listener: Any) -> None:
        self.listener = listener

    def onQueryStarted(self, jevent: Any) -> None:
        from pyspark.sql.streaming.listener import QueryStartedEvent

        self.listener.onQueryStarted(QueryStartedEvent.fromJObject(jevent))

    def onQueryProgress(self, jevent: Any) -> None:
        self.listener.log_progress(jevent.progress().json())

    def onQueryIdle(self, jevent: Any) -> None:
        from pyspark.sql.streaming.listener import QueryIdleEvent

        self.listener.onQueryIdle(QueryIdleEvent.fromJObject(jevent))

    def onQueryTerminated(self, jevent: Any) -> None:
        from pyspark.sql.streaming.listener import QueryTerminatedEvent

        self.listener.onQueryTerminated(QueryTerminatedEvent.fromJObject(jevent))

    class Java:
        implements = ["org.apache.spark.sql.streaming.PythonStreamingQueryListener"]


def idle_record(
    name: str, query_id: str, run_id: str, timestamp: str, job: str, now: float
) -> dict[str, Any]:
    """The line logged for an idle query: caught up, waiting for data."""
    return {
        "event": IDLE,
        "name": name,
        "id": query_id,
        "runId": run_id,
        "timestamp": timestamp,
        "statekeeper": {"job": job, "logged_at": now},
    }


def heartbeat_record(
    name: str, query_id: str, run_id: str, job: str, running_seconds: float, now: float
) -> dict[str, Any]:
    """The line logged while a batch runs: the driver is alive, the batch has run this long."""
    return {
        "event": HEARTBEAT,
        "name": name,
        "id": query_id,
        "runId": run_id,
        "batch_running_seconds": round(running_seconds, 1),
        "statekeeper": {"job": job, "logged_at": now},
    }


def last_progress(checkpoint: str) -> dict[str, Any] | None:
    """The newest batch record, read from the end of the log."""
    newest = ProgressLog(checkpoint).tail(1)
    return newest[0].raw if newest else None
