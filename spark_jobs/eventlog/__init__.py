"""The event log's writers: one Delta table per deployment, a row per committed batch and per
operation (the schema and the reader: :mod:`spark_jobs.contract.events`).

Each hook elsewhere is one call into here:

- the runner: :func:`open_run` after its checks, ``close`` on the way out;
- the progress listener calls :func:`query_started` and :func:`batch_committed` (subscribed to
  its ``ON_START``/``ON_BATCH`` by :func:`open_run`);
- commands that change a job (snapshot, restore, rollback, repartition, publish, quality, ...):
  :func:`record` on their success path.

``STATEKEEPER_EVENT_LOG=0`` turns the log off (the benchmark's "without" side).
"""

from __future__ import annotations

import os
import threading
from typing import Any

from spark_jobs.contract.spec import JobSpec

ENABLED_ENV = "STATEKEEPER_EVENT_LOG"
_RUNS: dict[str, Any] = {}  # checkpoint -> the RunLog of the run this process has on it
_LOCK = threading.Lock()


def enabled() -> bool:
    return os.environ.get(ENABLED_ENV, "1").strip().lower() not in ("0", "false", "off", "no")


class _Off:
    def close(self, exc: BaseException | None, stop_signal: list[int] | None = None) -> None:
        pass


OFF = _Off()  # the log of a run that writes no rows


def open_run(spec: JobSpec, **options: Any) -> Any:
    """Start logging a run of ``spec`` (the runner calls it under the checkpoint lock, before
    the query starts): the missing rows of earlier batches are written first. Returns the run's
    log; call its ``close(exception or None, stop signal)`` when the run ends."""
    if not enabled():
        return OFF
    from spark_jobs.eventlog.runlog import RunLog
    from spark_jobs.runtime import progress

    log = RunLog(spec, {k: v for k, v in options.items() if v})
    with _LOCK:
        _RUNS[spec.checkpoint] = log
        if query_started not in progress.ON_START:
            progress.ON_START.append(query_started)
            progress.ON_BATCH.append(batch_committed)
    log.begin()
    return _Closing(spec.checkpoint, log)


class _Closing:
    def __init__(self, checkpoint: str, log: Any) -> None:
        self.checkpoint, self.log = checkpoint, log

    def close(self, exc: BaseException | None, stop_signal: list[int] | None = None) -> None:
        with _LOCK:
            _RUNS.pop(self.checkpoint, None)
        self.log.close(exc, stop_signal)


def query_started(checkpoint: str | None, query_id: str, run_id: str) -> None:
    log = _RUNS.get(checkpoint or "")
    if log is not None:
        log.started(query_id, run_id)


def batch_committed(checkpoint: str | None, record: dict[str, Any]) -> None:
    """A committed batch's progress record (from the listener's thread: a queue put)."""
    log = _RUNS.get(checkpoint or "")
    if log is not None:
        log.batch(record)


def record(
    kind: str,
    job: str | None,
    checkpoint: str | None = None,
    reason: str | None = None,
    details: dict[str, Any] | None = None,
) -> None:
    """One operation's row (``kind`` from ``spark_jobs.contract.events.OPERATIONS``), appended
    now. The operation has succeeded when this is called: a failure to log is only warned about."""
    if not enabled():
        return
    import time

    from spark_jobs.eventlog import store, who
    from spark_jobs.eventlog.runlog import warn

    row = {
        "kind": kind,
        "job": job,
        "checkpoint": checkpoint,
        "at": time.time(),
        "who": who.who(),
        "args": who.args(),
        "reason": reason,
        "details": details or {},
    }
    try:
        store.append([row])
    except Exception as exc:  # noqa: BLE001 - the operation is done; its row is only history
        warn(f"{kind} row", exc)


def operation(
    kind: str,
    target: Any,
    result: dict[str, Any],
    reason: str | None = None,
    dry_run: bool = False,
) -> None:
    """A command's success, logged: ``target`` is a job spec or a checkpoint command's target
    (``job``, ``checkpoint``); ``result`` (what the command printed) becomes the details, without
    its file lists. A dry run changed nothing and is not logged."""
    if dry_run:
        return
    spec = getattr(target, "spec", None) or target
    job = getattr(target, "job", None) or getattr(spec, "name", None)
    checkpoint = getattr(target, "checkpoint", None)
    details = {k: v for k, v in result.items() if k != "files"}
    record(kind, job, checkpoint, reason, details)
