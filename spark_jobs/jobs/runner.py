"""Run one job: check, lock, build, start the output and quarantine queries, wait, summarise.

Two streaming queries share one read of nothing: the output query (the job's own checkpoint) and
the quarantine query (its checkpoint under ``_statekeeper/quarantine``) each read the landing
folder, so bad records are kept even when the job's logic fails, and each is exactly once.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from spark_jobs.errors import JobFailed, UserError
from spark_jobs.io import events as ev
from spark_jobs.io import sinks, sources, tables
from spark_jobs.jobs import job_module
from spark_jobs.runtime import binding, paths, progress
from spark_jobs.runtime.lock import JobLock
from spark_jobs.runtime.spec import JobSpec


@dataclass
class RunSummary:
    job: str
    trigger: str
    batches: int = 0
    input_rows: int = 0
    dropped_by_watermark: int = 0
    state_rows: int = 0
    rows_written: int = 0
    quarantined: int = 0
    output_version: int | None = None
    seconds: float = 0.0
    output: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        return json.dumps(asdict(self))


def quarantine_checkpoint(spec: JobSpec) -> str:
    return paths.join(spec.checkpoint, paths.STATEKEEPER_DIR, paths.QUARANTINE_CHECKPOINT)


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
    fp = spec.state_fingerprint()
    module = job_module(spec.name)
    if hasattr(module, "time_mode"):
        fp["time_mode"] = module.time_mode(spec)
    return fp


def precheck(spec: JobSpec) -> None:
    """Everything that can be said before Spark starts: inputs, checkpoint health, binding."""
    for uri in spec.inputs.values():
        sources.check_input(uri, spec.name)
    from spark_jobs.checkpoints.validate import validate_checkpoint

    report = validate_checkpoint(spec.checkpoint, spec)
    if report.errors:
        first = report.errors[0]
        raise UserError(
            f"checkpoint {spec.checkpoint} is not safe to run on: [{first.code}] {first.message}; "
            f"{first.fix} (python -m spark_jobs checkpoint validate --checkpoint {spec.checkpoint})",
            exit_code=4,
        )
    binding.check_and_bind(spec.checkpoint, fingerprint(spec), spec.path or f"job {spec.name}")


def _one_line(exc: BaseException) -> str:
    text = str(getattr(exc, "desc", None) or exc)
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("==="):
            return line[:400]
    return type(exc).__name__


def run_job(
    spec: JobSpec,
    conf: dict[str, str] | None = None,
    run_for: float | None = None,
    spark: Any = None,
) -> RunSummary:
    """Run ``spec`` until its trigger says stop (available-now) or ``run_for`` seconds pass."""
    module = job_module(spec.name)
    spec = binding.adopt_repartition(spec)
    with JobLock(spec.checkpoint, job=spec.name, purpose="run"):
        precheck(spec)
        from spark_jobs.runtime.session import build_session

        own_session = spark is None
        spark = spark or build_session(
            f"statekeeper-{spec.name}", spec=spec, conf=conf, log_file=spark_log(spec)
        )
        if not own_session:
            from spark_jobs.runtime.session import spec_confs

            for k, v in {**spec_confs(spec), **(conf or {})}.items():
                spark.conf.set(k, v)
        started = time.time()
        qname = f"{spec.name}"
        quarantine_name = f"{spec.name}__quarantine"
        listener = progress.make_listener(
            spec.name, {qname: spec.checkpoint, quarantine_name: quarantine_checkpoint(spec)}
        )
        spark.streams.addListener(listener)
        queries: list[Any] = []
        try:
            good: dict[str, Any] = {}
            bad = None
            for kind in spec.kinds:
                parsed = ev.parse_lines(sources.read_lines(spark, spec, kind), kind)
                good[kind] = ev.good_events(parsed, kind)
                b = ev.bad_records(parsed, spec.name, kind)
                bad = b if bad is None else bad.unionByName(b)
            out = module.build(spark, spec, good)
            trig = _trigger(spec)
            queries.append(
                sinks.start_append(
                    bad, spec.quarantine, quarantine_checkpoint(spec), quarantine_name, trig
                )
            )
            if module.SINK == "upsert":
                queries.append(
                    sinks.start_upsert(
                        out, spec.output, spec.checkpoint, qname, trig, tables.KEYS[spec.name]
                    )
                )
            else:
                queries.append(sinks.start_append(out, spec.output, spec.checkpoint, qname, trig))
            _wait(queries, run_for)
            _wait_for_listener(spec, queries)
        except UserError:
            raise
        except Exception as exc:  # a failed query: one line, the detail stays in Spark's log
            if (
                type(exc).__name__
                in (
                    "StreamingQueryException",
                    "AnalysisException",
                    "IllegalArgumentException",
                    "Py4JJavaError",
                    "PySparkException",
                )
                or "pyspark" in type(exc).__module__
            ):
                raise JobFailed(f"job {spec.name} failed: {_one_line(exc)}") from exc
            raise
        finally:
            for q in queries:
                try:
                    if q.isActive:
                        q.stop()
                except Exception:
                    pass
            spark.streams.removeListener(listener)
        return summarise(spec, spark, started, {str(q.runId) for q in queries})


def _wait(queries: list[Any], run_for: float | None) -> None:
    deadline = None if run_for is None else time.time() + run_for
    while True:
        for q in queries:
            if not q.isActive and q.exception() is not None:
                raise q.exception()
        if all(not q.isActive for q in queries):
            return
        if deadline is not None and time.time() >= deadline:
            for q in queries:
                q.stop()
            return
        for q in queries:
            if q.isActive:
                q.awaitTermination(0.5)


def _wait_for_listener(spec: JobSpec, queries: list[Any], timeout: float = 15.0) -> None:
    """Progress events reach the listener asynchronously: wait until each query's last batch is
    in its log, so the summary (and whoever reads the log next) sees the whole run."""
    wanted = {}
    for q in queries:
        last = q.lastProgress
        if last:
            target = spec.checkpoint if q.name == spec.name else quarantine_checkpoint(spec)
            wanted[target] = (str(last["runId"]), int(last["batchId"]))
    deadline = time.time() + timeout
    while wanted and time.time() < deadline:
        for target, (run_id, batch) in list(wanted.items()):
            if any(
                r.get("runId") == run_id and int(r.get("batchId", -1)) >= batch
                for r in progress.read_progress(target)
            ):
                del wanted[target]
        if wanted:
            time.sleep(0.2)


def _rows_written_since(spark: Any, uri: str, started_ms: int) -> tuple[int, int | None]:
    """(rows added or changed by commits since ``started_ms``, latest version) of a Delta table."""
    if not sinks.is_delta_table(uri):
        return 0, None
    from delta.tables import DeltaTable

    rows, version = 0, None
    for h in (
        DeltaTable.forPath(spark, uri)
        .history()
        .select("version", "timestamp", "operationMetrics")
        .collect()
    ):
        version = max(version or 0, int(h["version"]))
        if int(h["timestamp"].timestamp() * 1000) < started_ms:
            continue
        m = h["operationMetrics"] or {}
        rows += int(m.get("numOutputRows") or 0)
        rows += int(m.get("numTargetRowsInserted") or 0) + int(m.get("numTargetRowsUpdated") or 0)
    return rows, version


def summarise(spec: JobSpec, spark: Any, started: float, run_ids: set[str]) -> RunSummary:
    s = RunSummary(job=spec.name, trigger=str(spec.trigger), output=spec.output)
    s.seconds = round(time.time() - started, 2)
    for rec in progress.read_progress(spec.checkpoint):
        if rec.get("runId") not in run_ids:
            continue
        s.batches += 1
        s.input_rows += int(rec.get("numInputRows") or 0)
        ops = rec.get("stateOperators") or []
        s.dropped_by_watermark += sum(int(o.get("numRowsDroppedByWatermark") or 0) for o in ops)
        s.state_rows = sum(int(o.get("numRowsTotal") or 0) for o in ops)
    started_ms = int(started * 1000) - 1000
    s.rows_written, s.output_version = _rows_written_since(spark, spec.output, started_ms)
    s.quarantined, _ = _rows_written_since(spark, spec.quarantine, started_ms)
    return s
