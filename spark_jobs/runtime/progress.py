"""Every micro-batch's StreamingQueryProgress as one JSON line in ``_statekeeper/progress.jsonl``.

Readable without Spark: :func:`read_progress` is what the checkpoint tools, quality checks and the
Airflow supervisor use.

Since Spark 3.5 a continuous query with no new data reports ``onQueryIdle`` instead of empty
progress, so without more a caught-up job would look stalled. The listener logs those as
``{"event": "idle", ...}`` lines, at most one per query per ``IDLE_LOG_EVERY`` seconds (idle
events come every 10 s, forever). Readers get batch progress only unless they ask for idle
records (the supervisor's health check does).

A batch reading Kafka also gets a top-level ``lag`` object: per topic, records behind the
topic's latest offsets (spark_jobs.kafka.lag).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from spark_jobs.kafka.lag import source_lag
from spark_jobs.runtime import paths

IDLE = "idle"
IDLE_LOG_EVERY = 60.0  # seconds; well below the supervisor's stalled limit (5 minutes)


def progress_path(checkpoint: str) -> str:
    return paths.join(checkpoint, paths.STATEKEEPER_DIR, paths.PROGRESS_FILE)


def append_line(target: str, record: dict[str, Any]) -> None:
    line = json.dumps(record, separators=(",", ":"), default=str) + "\n"
    local = paths.local_path(target)
    if local is not None:
        local.parent.mkdir(parents=True, exist_ok=True)
        with open(local, "a", encoding="utf-8") as fh:
            fh.write(line)
        return
    import fsspec

    with fsspec.open(target, "a", encoding="utf-8") as fh:  # object stores: append = rewrite
        fh.write(line)


def is_idle(record: dict[str, Any]) -> bool:
    return record.get("event") == IDLE


def read_progress(checkpoint: str, idle: bool = False) -> list[dict[str, Any]]:
    """All progress records of a checkpoint, oldest first ([] when none yet); with ``idle``,
    the idle records too."""
    return [r for r in iter_progress(checkpoint) if idle or not is_idle(r)]


def iter_progress(checkpoint: str) -> Iterator[dict[str, Any]]:
    """Every record of the log, idle ones included, oldest first."""
    target = progress_path(checkpoint)
    local = paths.local_path(target)
    if local is not None:
        if not local.exists():
            return
        text = local.read_text(encoding="utf-8")
    else:
        import fsspec

        fs, p = fsspec.core.url_to_fs(target)
        if not fs.exists(p):
            return
        text = fs.cat_file(p).decode()
    for line in text.splitlines():
        line = line.strip()
        if line:
            try:
                yield json.loads(line)
            except ValueError:
                continue  # a line cut by a kill mid-write; the next batch writes a whole one


def make_listener(job: str, targets: dict[str, str]):  # -> StreamingQueryListener
    """A listener writing each progress of the named queries to its progress file.

    ``targets`` maps a query name to the checkpoint whose progress log it writes.
    """
    from pyspark.sql.streaming import StreamingQueryListener

    lock = threading.Lock()
    names: dict[str, str] = {}  # query id -> name (idle events carry only the id)
    last_idle: dict[str, float] = {}

    class ProgressLog(StreamingQueryListener):
        def onQueryStarted(self, event: Any) -> None:
            names[str(event.id)] = event.name or ""

        def onQueryProgress(self, event: Any) -> None:
            progress = json.loads(event.progress.json)
            checkpoint = targets.get(progress.get("name") or "")
            if checkpoint is None:
                return
            progress["statekeeper"] = {"job": job, "logged_at": time.time()}
            lag = source_lag(progress)
            if lag:  # Kafka sources: records behind the topic's end, per topic and partition
                progress["lag"] = lag
            with lock:
                append_line(progress_path(checkpoint), progress)

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
            with lock:
                append_line(progress_path(checkpoint), record)

        def onQueryTerminated(self, event: Any) -> None:
            pass

    return ProgressLog()


def idle_record(
    name: str, query_id: str, run_id: str, timestamp: str, job: str, now: float
) -> dict[str, Any]:
    """The line logged for an idle query: caught up, waiting for data."""
    return {
        "event": IDLE, "name": name, "id": query_id, "runId": run_id, "timestamp": timestamp,
        "statekeeper": {"job": job, "logged_at": now},
    }  # fmt: skip


def last_progress(checkpoint: str) -> dict[str, Any] | None:
    last = None
    for rec in iter_progress(checkpoint):
        if not is_idle(rec):
            last = rec
    return last


def progress_file_age_seconds(checkpoint: str) -> float | None:
    local = paths.local_path(progress_path(checkpoint))
    if local is None or not local.exists():
        return None
    return time.time() - Path(local).stat().st_mtime
