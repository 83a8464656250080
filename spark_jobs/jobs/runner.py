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
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from spark_jobs import completeness, eventlog
from spark_jobs.contract import binding, delta, paths
from spark_jobs.contract.errors import ExitCode, UserError
from spark_jobs.contract.lock import JobLock
from spark_jobs.contract.progress_log import BatchProgress, ProgressLog
from spark_jobs.contract.spec import JobSpec
from spark_jobs.io import events as ev
from spark_jobs.io import sinks, sources, watermarks
from spark_jobs.jobs import definition, fingerprint, query_wait
from spark_jobs.jobs.run_failures import failure, jvm_gone
from spark_jobs.runtime import progress, spark_errors

if TYPE_CHECKING:
    from spark_jobs.checkpoints.layout import Layout


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
) -> Layout:
    """Everything that can be said before Spark starts: inputs, checkpoint health, the tables'
    writers, binding (the spec's and the tables'). Returns the checkpoint's layout it read."""
    from spark_jobs.checkpoints.landing_codecs import read_as_text_line, refuse_read_as_nothing
    from spark_jobs.checkpoints.unread import gone_line, never_read_line

    for uri in spec.inputs.values():
        sources.check_input(uri, spec.name)
        # landed but never to be read (events.ndjson, a subfolder), or read as text though
        # compressed (a .json.xz): said now, not found later in the quarantine
        for line in (never_read_line(uri, spec.name), read_as_text_line(uri, spec.name)):
            if line is not None:
                print(line, file=sys.stderr, flush=True)
    from spark_jobs.checkpoints.queries import check_pending

    check_pending(spec.checkpoint)  # first: a command cut short says best what to do
    from spark_jobs.checkpoints.layout import read_layout
    from spark_jobs.checkpoints.validate import validate_checkpoint

    layout = read_layout(spec.checkpoint, sizes=False)  # one listing for both
    if clear_first_batch(spec, layout):
        layout = read_layout(spec.checkpoint, sizes=False)
    report = validate_checkpoint(spec.checkpoint, spec, layout=layout)
    # a gone output table is refused below by the binding, which honours --rebind-tables
    if errors := [f for f in report.errors if f.code != "TABLE_GONE"]:
        first = errors[0]
        raise UserError(
            f"checkpoint {spec.checkpoint} is not safe to run on: [{first.code}] {first.message}; "
            f"{first.fix} (python -m spark_jobs checkpoint validate --checkpoint {spec.checkpoint})",
            exit_code=ExitCode.UNSAFE,
        )
    if (line := gone_line(layout, spec.name)) is not None:  # said before Spark skips them
        print(line, file=sys.stderr, flush=True)
    for uri in spec.inputs.values():  # an .lz4 Spark would read as no lines: refused unread
        if (line := refuse_read_as_nothing(uri, spec.name, layout)) is not None:
            print(line, file=sys.stderr, flush=True)
    for f in report.findings:  # lines appended to a file after its read: never to be read
        if f.code == "LANDING_FILES_CHANGED":
            print(
                f"statekeeper: job {spec.name}: {f.message}; {f.fix}", file=sys.stderr, flush=True
            )
    from spark_jobs.checkpoints.moved_inputs import refuse_moved_inputs

    refuse_moved_inputs(spec.checkpoint, layout, binding.bound_inputs(spec.checkpoint), spec.inputs)
    check_writer(spec, new_checkpoint_for_existing_table)
    job = definition(spec.name)
    binding.check_and_bind(
        spec.checkpoint,
        fingerprint(spec),
        spec.path or f"job {spec.name}",
        job.declaration(),
        job.comparable_params,
    )
    tables = {"output": spec.output, "quarantine": spec.quarantine}
    binding.bind_tables(spec.checkpoint, tables, rebind=rebind_tables)
    binding.record_inputs(spec.checkpoint, dict(spec.inputs))
    return layout


def run_session(spec: JobSpec, conf: dict[str, str] | None, layout: Layout) -> Any:
    """The session a run starts for itself: Spark's log beside the checkpoint, and the quick
    compiler for a short run (:func:`quick_compiler`)."""
    from spark_jobs.runtime.session import build_session

    return build_session(
        f"statekeeper-{spec.name}",
        spec=spec,
        conf=conf,
        log_file=spark_log(spec),
        quick_compiler=quick_compiler(spec, layout),
    )


def quick_compiler(spec: JobSpec, layout: Layout) -> bool:
    """Whether the run's driver starts with the JVM's quick compiler: an available-now run with
    little left to read (:func:`spark_jobs.contract.jvm.quick_compiler`)."""
    from spark_jobs.checkpoints.unread import pending_bytes
    from spark_jobs.contract import jvm

    backlog = pending_bytes(spec.inputs.values(), layout)
    return jvm.quick_compiler(spec.trigger.available_now, backlog)


def clock_marks(spec: JobSpec) -> tuple[int | None, int | None]:
    """From the job's checkpoint, what the parse's "ahead of the clock" check needs
    (:func:`spark_jobs.io.events.parse_lines`):

    - the newest event time the job has admitted: the newest batch's watermark (the newest
      event time seen minus the delay; with two inputs, the lower) plus the delay; None before
      any watermark;
    - the earliest clock of a batch this run will run: the clock kept with an uncommitted
      batch, which is run again as it was planned, if earlier than now; None for now."""
    from spark_jobs.checkpoints.layout import read_layout

    lay = read_layout(spec.checkpoint, parse_tail=1, sizes=False)
    last = lay.last_offset
    meta = (lay.offset_meta.get(last) or {}) if last is not None else {}
    wm = meta.get("batchWatermarkMs")
    admitted = wm + int(spec.watermark_seconds * 1000) if isinstance(wm, int) and wm > 0 else None
    replayed = last is not None and (lay.last_committed is None or lay.last_committed < last)
    clock = meta.get("batchTimestampMs")
    floor = min(clock, int(time.time() * 1000)) if replayed and isinstance(clock, int) else None
    return admitted, floor


def build_stream(spark: Any, spec: JobSpec) -> Any:
    """The query's rows: the job's output unioned with the bad records of every input.

    Each source is scanned and parsed once per batch: the job and the bad records both read the
    parsed lines' one shuffle (:func:`spark_jobs.io.events.shared`), partitioned on what the
    job's operator groups by (a bucket column added first) and under the job's watermark
    (:func:`spark_jobs.io.watermarks.before_shuffle`), so the operator adds no shuffle."""
    from pyspark.sql import functions as F

    job = definition(spec.name)
    good: dict[str, Any] = {}
    bad = None
    keys = job.shuffle_keys(spec) if job.shuffle_keys else {}
    marks = job.watermarks(spec) if job.watermarks else {}
    admitted, clock_floor = clock_marks(spec)
    for kind in spec.kinds:
        lines = sources.read_lines(spark, spec, kind)
        parsed = ev.parse_lines(lines, kind, spec.max_future_seconds, admitted, clock_floor)
        by = dict(keys.get(kind) or {})
        added = {name: c for name, c in by.items() if name not in parsed.columns}
        if added:
            parsed = parsed.withColumns(added)
        if kind in marks:
            parsed = watermarks.before_shuffle(parsed, marks[kind], spec.watermark_seconds)
        parsed = ev.shared(parsed, spec.shuffle_partitions, [F.col(n) for n in by] or None)
        good[kind] = ev.good_events(parsed, kind, tuple(added))
        b = ev.bad_records(parsed, spec.name, kind)
        bad = b if bad is None else bad.unionByName(b)
    return sinks.combine(job.build(spark, spec, good), bad)


def start_query(spark: Any, spec: JobSpec, qname: str) -> Any:
    """The job's one streaming query, started: its output and bad records, written by a
    ``foreachBatch`` that appends (or, for an upsert job, merges on its keys) exactly once."""
    job = definition(spec.name)
    out = build_stream(spark, spec)
    data_columns = [c for c in out.columns if c not in (sinks.KEYS_COL, sinks.QUARANTINE_COL)]
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
    mode = "update" if upsert else "append"
    return sinks.start(out, spec.checkpoint, qname, _trigger(spec), writer, mode)


def run_job(
    spec: JobSpec,
    conf: dict[str, str] | None = None,
    run_for: float | None = None,
    spark: Any = None,
    new_checkpoint_for_existing_table: bool = False,
    rebind_tables: bool = False,
    record_events: bool = True,
) -> RunSummary:
    """Run ``spec`` until its trigger says stop (available-now) or ``run_for`` seconds pass.

    ``new_checkpoint_for_existing_table``: let a new checkpoint write into tables that other
    queries already filled (every input row is written again). ``rebind_tables``: let a
    committed checkpoint write its next batches into other tables than it is bound to.
    ``record_events``: False for a run that is not the job's (``upgrade preview``'s shadow), so
    the event log keeps one row per batch of the job itself."""
    job = definition(spec.name)
    job.check_spec(spec)  # inputs and params, before anything is written
    spec = binding.adopt_repartition(spec)
    # Once before the lock as well: taking it creates the checkpoint folder, and a refused run
    # should leave nothing behind. Under the lock it is checked again, for real.
    check_writer(spec, new_checkpoint_for_existing_table)
    with JobLock(spec.checkpoint, job=spec.name, purpose="run"):
        layout = precheck(spec, new_checkpoint_for_existing_table, rebind_tables)
        own_session = spark is None
        spark = spark or run_session(spec, conf, layout)
        if not own_session:
            from spark_jobs.contract.spark_confs import spec_confs

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
        settles = float(job.settles_after(spec))
        completeness.catch_up(spec, settles)  # what a kill left committed but unrecorded
        listener = progress.make_listener(spec.name, targets, completeness.recorder(spec, settles))
        spark.streams.addListener(listener)
        queries: list[Any] = []
        stop_signal: list[int] = []
        events = (
            eventlog.open_run(spec, trigger=str(spec.trigger), run_for=run_for, conf=conf)
            if record_events
            else eventlog.OFF
        )
        gone = False  # the driver's JVM went away under the run
        try:
            with query_wait.graceful_stop(stop_signal):
                query_wait.wait_restarting(
                    lambda: start_query(spark, spec, qname),
                    queries,
                    run_for,
                    query_wait.Heartbeat(spec.name, targets),
                    stop_signal,
                )
            query_wait.wait_for_listener(spec, queries)
        except spark_errors.SPARK_ERRORS as exc:  # a failed query, a refused plan, a JVM error
            raise failure(spec, exc) from exc
        except spark_errors.GATEWAY_ERRORS as exc:
            gone = True
            raise jvm_gone(spec, started) from exc
        finally:
            if not gone:  # a JVM that went away has no query left to stop, no listener
                for q in queries:
                    query_wait.stop_quietly(q, qname)
                spark.streams.removeListener(listener)
            events.close(sys.exc_info()[1], stop_signal)  # the stop or failure row, last appends
        summary = summarise(spec, started, {str(q.runId) for q in queries}, before)
        if stop_signal:
            summary.extra["stopped_by"] = signal.Signals(stop_signal[0]).name
        return summary


CLOCK_SLACK = 5.0  # seconds: a batch's trigger time vs the run's start, same clock


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
