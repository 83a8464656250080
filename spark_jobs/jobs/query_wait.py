"""Waiting on a run's streaming queries: until they end or ``--run-for`` passes, stopping them
between batches (never inside one), on SIGTERM gracefully, with a heartbeat in the progress log
while a long batch runs, and until the listener has logged the last batch."""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from spark_jobs.contract.progress_log import BatchProgress, ProgressLog, ProgressRecord
from spark_jobs.contract.spec import JobSpec
from spark_jobs.runtime import progress, spark_errors


def stop_quietly(query: Any, name: str) -> None:
    """Stop ``query`` on the way out of a run; failing to is only warned about. This runs while
    another exception may be on its way up (that one says what went wrong), and a query left
    running dies with the driver: its checkpoint re-runs a batch cut short, exactly once.
    ``name`` is passed in because asking a dead JVM for it would fail too."""
    try:
        if query.isActive:
            query.stop()
    except spark_errors.STOP_ERRORS as exc:
        print(
            f"statekeeper: warning: could not stop query {name} "
            f"({spark_errors.reason(exc)}); its checkpoint re-runs any batch cut short",
            file=sys.stderr,
            flush=True,
        )


@contextmanager
def graceful_stop(flag: list[int]) -> Iterator[None]:
    """While inside, SIGTERM only sets ``flag`` (the wait loop then stops between batches); a
    second SIGTERM ends the process at once. Signals reach the main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_term(signum: int, _frame: Any) -> None:
        if flag:
            sys.exit(128 + signum)  # asked twice: stop now
        flag.append(signum)
        print("statekeeper: SIGTERM: stopping after the running batch", file=sys.stderr, flush=True)

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class Heartbeat:
    """Appends a heartbeat record to a query's progress log every ``progress.heartbeat_every()``
    seconds while one of its batches runs (Spark reports progress only when a batch ends)."""

    LOOK_EVERY = 2.0  # seconds between looks at the queries' status (one JVM call each)

    def __init__(self, job: str, targets: dict[str, str]) -> None:
        self.job = job
        self.targets = targets  # query name -> checkpoint whose progress log it writes
        self.every = progress.heartbeat_every()
        self.running_since: dict[str, float] = {}
        self.last_beat: dict[str, float] = {}
        self.batch_seen: dict[str, tuple[Any, Any]] = {}
        self.last_look = 0.0

    def tick(self, queries: list[Any]) -> None:
        now = time.time()
        if now - self.last_look < min(self.LOOK_EVERY, self.every / 2):
            return
        self.last_look = now
        for q in queries:
            name = q.name
            if name not in self.targets or not q.isActive or not q.status["isTriggerActive"]:
                self.running_since.pop(name, None)
                continue
            # Batches may run back to back: a new last progress means a new batch began.
            batch = _last_batch(q)
            if self.batch_seen.get(name) != batch:
                self.batch_seen[name] = batch
                self.running_since.pop(name, None)
            since = self.running_since.setdefault(name, now)
            if now - since >= self.every and now - self.last_beat.get(name, 0.0) >= self.every:
                record = progress.heartbeat_record(
                    name, str(q.id), str(q.runId), self.job, now - since, now
                )
                progress.append_line(progress.progress_path(self.targets[name]), record)
                self.last_beat[name] = now


def wait(
    queries: list[Any],
    run_for: float | None,
    heartbeat: Heartbeat | None = None,
    stop_signal: list[int] | None = None,
) -> None:
    deadline = None if run_for is None else time.time() + run_for
    while True:
        for q in queries:
            if not q.isActive and q.exception() is not None:
                raise q.exception()
        if all(not q.isActive for q in queries):
            return
        # --run-for ends a run between batches too: a batch cut short is planned again the same
        # next time, so one longer than every run would never end.
        if stop_signal or (deadline is not None and time.time() >= deadline):
            _stop_between_batches(queries, heartbeat)
            return
        if heartbeat is not None:
            heartbeat.tick(queries)
        for q in queries:
            if q.isActive:
                q.awaitTermination(0.5)


# Spark gives a Python worker it starts on the driver (transformWithState's state-schema check,
# when a query plans its first batch) 10 s to connect back, a limit written into its code. On a
# loaded machine that interpreter's start-up (pandas, pyarrow) can take longer, and the query
# fails before it has read anything: seen in a CI run with four queries starting side by side.
# Starting the query again from its checkpoint is exactly what recovery after a crash does, so
# a run does that, a few times, instead of failing for no fault of the job.
SLOW_WORKER = "Python worker failed to connect back"
WORKER_START_SECONDS = 10  # Spark's (PythonWorkerFactory.createSimpleWorker), not a setting
START_ATTEMPTS = 3


def slow_worker_start(exc: BaseException) -> bool:
    """Whether ``exc`` is Spark giving up on a driver-side Python worker's start (see above)."""
    return SLOW_WORKER in str(exc)


def wait_restarting(
    start: Callable[[], Any],
    queries: list[Any],
    run_for: float | None,
    heartbeat: Heartbeat | None = None,
    stop_signal: list[int] | None = None,
    attempts: int = START_ATTEMPTS,
) -> None:
    """Start a query with ``start`` (appended to ``queries``) and :func:`wait` on it; when it
    fails only because a Python worker was slow to start, start it again from its checkpoint,
    up to ``attempts`` starts in all. ``run_for`` is the whole run's, restarts included."""
    deadline = None if run_for is None else time.time() + run_for
    for attempt in range(1, attempts + 1):
        queries.append(start())
        left = None if deadline is None else max(0.0, deadline - time.time())
        try:
            wait(queries[-1:], left, heartbeat, stop_signal)
            return
        except spark_errors.SPARK_ERRORS as exc:
            if attempt == attempts or stop_signal or not slow_worker_start(exc):
                raise
            name = queries[-1].name
            stop_quietly(queries[-1], name)
            print(
                f"statekeeper: warning: query {name}: Spark's Python worker did not start "
                f"within its {WORKER_START_SECONDS} s (a loaded machine?); starting the query "
                f"again from its checkpoint (start {attempt + 1} of {attempts})",
                file=sys.stderr,
                flush=True,
            )


def _stop_between_batches(queries: list[Any], heartbeat: Heartbeat | None) -> None:
    """Stop each query once the batch it was running has ended. ``query.stop()`` would interrupt
    a running batch, so a query is stopped when its trigger is quiet or when a batch has ended
    since the signal (a next batch that started back to back is cut and re-run later from the
    checkpoint: exactly once either way)."""
    pending = {id(q): (q, _last_batch(q)) for q in queries if q.isActive}
    while pending:
        for key, (q, at_signal) in list(pending.items()):
            if not q.isActive or not q.status["isTriggerActive"] or _last_batch(q) != at_signal:
                q.stop()
                del pending[key]
        if heartbeat is not None:
            heartbeat.tick([q for q, _ in pending.values()])
        if pending:
            time.sleep(0.2)


def _last_batch(q: Any) -> tuple[Any, Any]:
    last = q.lastProgress or {}
    return last.get("batchId"), last.get("timestamp")


WAIT_TAIL = 20  # newest batch records looked at once before following the log


def wait_for_listener(spec: JobSpec, queries: list[Any], timeout: float = 15.0) -> None:
    """Progress events reach the listener asynchronously: wait until the query's last batch is
    in its log, so the summary (and whoever reads the log next) sees the whole run."""
    wanted = None
    for q in queries:
        last = q.lastProgress
        # A trigger that ran no batch (nothing new) updates lastProgress but posts no progress
        # event (Spark 4 reports it as idle): waiting for it would cost the whole timeout.
        if last and "addBatch" in (last.get("durationMs") or {}):
            wanted = (str(last["runId"]), int(last["batchId"]))
    if wanted is None:
        return
    run_id, batch = wanted

    def arrived(records: list[ProgressRecord]) -> bool:
        return any(
            isinstance(r, BatchProgress) and r.run_id == run_id and r.batch_id >= batch
            for r in records
        )

    log = ProgressLog(spec.checkpoint)
    # Only what is appended is read while waiting (the log holds up to ~100 MB of history):
    # the follower starts at the end first, so a record written meanwhile is not missed, then
    # the newest records already there are looked at once.
    follower = log.follow()
    if arrived(log.tail(WAIT_TAIL)):
        return
    deadline = time.time() + timeout
    while time.time() < deadline:
        if arrived(follower.read_new()):
            return
        time.sleep(0.2)
