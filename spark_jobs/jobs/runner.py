"""Run one job: check, lock, build, start its one streaming query, wait, summarise.

Each landing line is read and parsed once per batch: the parsed lines are shuffled once, on what
the job's stateful operator groups by (:func:`spark_jobs.io.events.shared`), and both the job
and the bad records read that shuffle. The query's rows are the job's output unioned with the
bad records, and its ``foreachBatch`` writes each kind to its own Delta table, both exactly once
(:mod:`spark_jobs.io.sinks`).

SIGTERM is a graceful stop: the run lets the running micro-batches finish, stops its queries
between batches, writes its summary and exits 0 (a second SIGTERM or a SIGKILL still ends it at
once; a batch cut short is re-run from the checkpoint, exactly once). While a batch runs, a
heartbeat line goes to the progress log, so a long batch is not taken for a stalled driver.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from spark_jobs import completeness, eventlog
from spark_jobs.contract import delta, paths
from spark_jobs.contract.errors import ExitCode, JobFailed, UserError
from spark_jobs.contract.progress_log import BatchProgress, ProgressLog, ProgressRecord
from spark_jobs.contract.spec import JobSpec
from spark_jobs.io import events as ev
from spark_jobs.io import sinks, sources
from spark_jobs.jobs import definition
from spark_jobs.runtime import binding, progress, spark_errors
from spark_jobs.runtime.lock import JobLock


@dataclass
class RunSummary:
    job: str
    trigger: str
    batches: int = 0
    input_rows: int = 0
    dropped_by_watermark: int = 0
    state_rows: int = 0  # Spark's state rows (hash buckets for the batched executor)
    state_keys: int | None = None  # user keys held after the run (arbitrary-state jobs)
    rows_written: int = 0
    quarantined: int = 0
    output_version: int | None = None
    seconds: float = 0.0
    output: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        return json.dumps(asdict(self))


def spark_log(spec: JobSpec) -> str | None:
    """Spark's own log for a run, beside the progress log (local checkpoints only)."""
    local = paths.local_path(spec.checkpoint)
    if local is None:
        return None
    (local / paths.STATEKEEPER_DIR).mkdir(parents=True, exist_ok=True)
    return str(local / paths.STATEKEEPER_DIR / "spark.log")


def _trigger(spec: JobSpec) -> dict[str, Any]:
    if spec.trigger.available_now:
        return {"availableNow": True}
    return {"processingTime": f"{spec.trigger.interval_seconds:g} seconds"}


def fingerprint(spec: JobSpec) -> dict[str, Any]:
    return {**spec.state_fingerprint(), **definition(spec.name).fingerprint(spec)}


def check_writer(spec: JobSpec, new_checkpoint_for_existing_table: bool = False) -> None:
    """Refuse a new checkpoint on tables other queries already fill (it would write every row
    again), unless the user said so."""
    if new_checkpoint_for_existing_table:
        return
    from spark_jobs.checkpoints.writer_guard import check_outputs

    check_outputs(spec.output, spec.quarantine, spec.checkpoint)


def clear_first_batch(spec: JobSpec, layout: Any) -> bool:
    """A new checkpoint killed inside batch 0: move aside the state batch 0 left (none of it is
    needed, see :mod:`spark_jobs.checkpoints.first_batch`) so Spark runs batch 0 again from its
    offsets, under the same query id. Called under the job's lock; True when it moved some."""
    from spark_jobs.checkpoints import first_batch

    cleared = first_batch.clear(spec.checkpoint, layout)
    if cleared:
        print(
            f"statekeeper: batch 0 of checkpoint {spec.checkpoint} was cut short before it "
            f"committed; moved the {cleared['files']} state file(s) it left to "
            f"{cleared['aside']} and running batch 0 again",
            file=sys.stderr,
            flush=True,
        )
    return cleared is not None


def precheck(
    spec: JobSpec, new_checkpoint_for_existing_table: bool = False, rebind_tables: bool = False
) -> None:
    """Everything that can be said before Spark starts: inputs, checkpoint health, the tables'
    writers, binding (the spec's and the tables')."""
    for uri in spec.inputs.values():
        sources.check_input(uri, spec.name)
    from spark_jobs.checkpoints.queries import check_pending

    check_pending(spec.checkpoint)  # first: a command cut short says best what to do
    from spark_jobs.checkpoints.layout import read_layout
    from spark_jobs.checkpoints.validate import validate_checkpoint

    layout = read_layout(spec.checkpoint, sizes=False)  # one listing for both
    if clear_first_batch(spec, layout):
        layout = read_layout(spec.checkpoint, sizes=False)
    report = validate_checkpoint(spec.checkpoint, spec, layout=layout)
    if report.errors:
        first = report.errors[0]
        raise UserError(
            f"checkpoint {spec.checkpoint} is not safe to run on: [{first.code}] {first.message}; "
            f"{first.fix} (python -m spark_jobs checkpoint validate --checkpoint {spec.checkpoint})",
            exit_code=ExitCode.UNSAFE,
        )
    check_writer(spec, new_checkpoint_for_existing_table)
    binding.check_and_bind(
        spec.checkpoint,
        fingerprint(spec),
        spec.path or f"job {spec.name}",
        definition(spec.name).declaration(),
    )
    tables = {"output": spec.output, "quarantine": spec.quarantine}
    binding.bind_tables(spec.checkpoint, tables, rebind=rebind_tables)


def failure(spec: JobSpec, exc: BaseException) -> JobFailed:
    """The one-line failure for an error Spark raised while ``spec`` ran (the detail stays in
    Spark's log)."""
    from spark_jobs.kafka.source import data_loss_line

    lost = data_loss_line(spec, str(exc))
    if lost:
        return JobFailed(lost)
    head = f"job {spec.name} failed: "
    return JobFailed(head + spark_errors.reason(exc, spark_errors.LINE_LIMIT - len(head)))


def admitted_until_ms(spec: JobSpec) -> int | None:
    """The newest event time the job has admitted, as far as its checkpoint says: the newest
    batch's watermark (the newest event time seen minus the delay; with two inputs, the lower)
    plus the delay. None before any watermark."""
    from spark_jobs.checkpoints.layout import read_layout

    lay = read_layout(spec.checkpoint, parse_tail=1, sizes=False)
    last = lay.last_offset
    wm = (lay.offset_meta.get(last) or {}).get("batchWatermarkMs") if last is not None else None
    if not isinstance(wm, int) or wm <= 0:
        return None
    return wm + int(spec.watermark_seconds * 1000)


def build_stream(spark: Any, spec: JobSpec) -> Any:
    """The query's rows: the job's output unioned with the bad records of every input.

    Each source is scanned and parsed once per batch: the job and the bad records both read the
    parsed lines' one shuffle (:func:`spark_jobs.io.events.shared`)."""
    job = definition(spec.name)
    good: dict[str, Any] = {}
    bad = None
    keys = job.shuffle_keys(spec) if job.shuffle_keys else {}
    admitted = admitted_until_ms(spec)
    for kind in spec.kinds:
        lines = sources.read_lines(spark, spec, kind)
        parsed = ev.shared(
            ev.parse_lines(lines, kind, spec.max_future_seconds, admitted),
            spec.shuffle_partitions,
            keys.get(kind),
        )
        good[kind] = ev.good_events(parsed, kind)
        b = ev.bad_records(parsed, spec.name, kind)
        bad = b if bad is None else bad.unionByName(b)
    return sinks.combine(job.build(spark, spec, good), bad)


def run_job(
    spec: JobSpec,
    conf: dict[str, str] | None = None,
    run_for: float | None = None,
    spark: Any = None,
    new_checkpoint_for_existing_table: bool = False,
    rebind_tables: bool = False,
) -> RunSummary:
    """Run ``spec`` until its trigger says stop (available-now) or ``run_for`` seconds pass.

    ``new_checkpoint_for_existing_table``: let a new checkpoint write into tables that other
    queries already filled (every input row is written again). ``rebind_tables``: let a
    committed checkpoint write its next batches into other tables than it is bound to."""
    job = definition(spec.name)
    job.check_spec(spec)  # inputs and params, before anything is written
    spec = binding.adopt_repartition(spec)
    # Once before the lock as well: taking it creates the checkpoint folder, and a refused run
    # should leave nothing behind. Under the lock it is checked again, for real.
    check_writer(spec, new_checkpoint_for_existing_table)
    with JobLock(spec.checkpoint, job=spec.name, purpose="run"):
        precheck(spec, new_checkpoint_for_existing_table, rebind_tables)
        from spark_jobs.runtime.session import build_session

        own_session = spark is None
        spark = spark or build_session(
            f"statekeeper-{spec.name}", spec=spec, conf=conf, log_file=spark_log(spec)
        )
        if not own_session:
            from spark_jobs.runtime.session import spec_confs

            for k, v in {**spec_confs(spec), **(conf or {})}.items():
                spark.conf.set(k, v)
        from spark_jobs.kafka import ids as kafka_ids

        # The topic and cluster the checkpoint read, by id: a re-created topic refused here
        # writes nothing (it needs the driver's JVM, so it cannot be in the precheck).
        kafka_ids.check_and_record(spark, spec)
        started = time.time()
        qname = f"{spec.name}"
        # Version at start, read from the log's file names: the summary reads only new commits.
        before = {uri: delta.version(uri) for uri in (spec.output, spec.quarantine)}
        targets = {qname: spec.checkpoint}
        listener = progress.make_listener(spec.name, targets, completeness.recorder(spec))
        spark.streams.addListener(listener)
        queries: list[Any] = []
        stop_signal: list[int] = []
        events = eventlog.open_run(spec, trigger=str(spec.trigger), run_for=run_for, conf=conf)
        try:
            out = build_stream(spark, spec)
            data_columns = [
                c for c in out.columns if c not in (sinks.KEYS_COL, sinks.QUARANTINE_COL)
            ]
            upsert = job.sink == "upsert"
            writer = sinks.make_batch_writer(
                spec.output,
                spec.quarantine,
                spec.checkpoint,
                qname,
                data_columns,
                job.keys if upsert else None,
                job.combined() if upsert else None,
            )
            queries.append(
                sinks.start(
                    out,
                    spec.checkpoint,
                    qname,
                    _trigger(spec),
                    writer,
                    "update" if upsert else "append",
                )
            )
            with _graceful_stop(stop_signal):
                _wait(queries, run_for, Heartbeat(spec.name, targets), stop_signal)
            _wait_for_listener(spec, queries)
        except spark_errors.SPARK_ERRORS as exc:  # a failed query, a refused plan, a JVM error
            raise failure(spec, exc) from exc
        finally:
            for q in queries:
                _stop_quietly(q, qname)
            spark.streams.removeListener(listener)
            events.close(sys.exc_info()[1], stop_signal)  # the stop or failure row, last appends
        summary = summarise(spec, started, {str(q.runId) for q in queries}, before)
        if stop_signal:
            summary.extra["stopped_by"] = signal.Signals(stop_signal[0]).name
        return summary


def _stop_quietly(query: Any, name: str) -> None:
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
def _graceful_stop(flag: list[int]) -> Iterator[None]:
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


def _wait(
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
CLOCK_SLACK = 5.0  # seconds: a batch's trigger time vs the run's start, same clock


def _wait_for_listener(spec: JobSpec, queries: list[Any], timeout: float = 15.0) -> None:
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


def summarise(
    spec: JobSpec, started: float, run_ids: set[str], before: dict[str, int | None]
) -> RunSummary:
    """The run's figures from its progress records and the Delta commits made since it started
    (their JSON only: no Spark job, no read of the tables' history)."""
    s = RunSummary(job=spec.name, trigger=str(spec.trigger), output=spec.output)
    s.seconds = round(time.time() - started, 2)
    # This run's batches only, read back from the end: they all started after ``started``.
    for rec in ProgressLog(spec.checkpoint).tail(None, since=started - CLOCK_SLACK):
        if not isinstance(rec, BatchProgress) or rec.run_id not in run_ids:
            continue
        s.batches += 1
        s.input_rows += rec.num_input_rows
        s.dropped_by_watermark += rec.dropped_by_watermark or 0
        s.state_rows = rec.state_rows or 0
        if rec.keys is not None:
            s.state_keys = rec.keys.total or 0
    s.rows_written, s.output_version = delta.rows_written_after(
        spec.output, before.get(spec.output)
    )
    s.quarantined, _ = delta.rows_written_after(spec.quarantine, before.get(spec.quarantine))
    return s
