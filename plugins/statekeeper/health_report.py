"""The streaming health of every job, from files only: progress logs, checkpoint metadata, the
quarantine and quality tables' Delta logs. No Spark, no Airflow: the page and its API call this.

Everything is read from the end of the files and memoised on the files' stat (size, mtime), so a
request over many jobs with long histories costs a few small reads per job.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from spark_jobs.contract import delta, lock, maintenance, paths, upgrade_plan
from spark_jobs.contract.errors import UserError
from spark_jobs.contract.progress_log import BatchProgress, ProgressLog, ProgressRecord, log_uri
from spark_jobs.contract.spec import JobSpec, list_jobs, load_spec
from statekeeper import batch_metrics as bm
from statekeeper import freshness, job_runs
from statekeeper.health import Thresholds, assess
from statekeeper.health_memo import memoised, stat

WINDOW = 20  # recent batches the status, the dropped rows and the quarantine rate look at
MAX_SCAN = 2000  # lines read back at most to find them (a long idle stretch logs idle lines)
CHECKPOINT_TTL = 60.0  # seconds a checkpoint verdict is reused while its folders are unchanged


def specs() -> list[JobSpec]:
    """Every job spec, parsed again only when a spec file changed."""
    folder = paths.specs_dir()
    names = list_jobs(folder)
    sig = tuple((n, stat(folder / f"{n}.yaml")) for n in names)
    return memoised("specs", str(folder), sig, lambda: [load_spec(n, folder) for n in names])


def spec_of(job: str) -> JobSpec:
    """The spec of ``job``; UserError (one line, naming the known jobs) when there is none."""
    for spec in specs():
        if spec.name == job:
            return spec
    return load_spec(job)  # raises the loader's own message for an unknown job


# -- the parts of a row --------------------------------------------------------------------------
@dataclass
class Tail:
    recent: list[ProgressRecord]  # the newest records, idle ones included, oldest first
    batches: list[BatchProgress]  # the newest batch records, oldest first
    facts: dict[str, Any] = field(default_factory=dict)  # the row's numbers (progress_facts)


def read_tail(checkpoint: str) -> Tail:
    recent: list[ProgressRecord] = []
    batches: list[BatchProgress] = []
    for i, rec in enumerate(ProgressLog(checkpoint).backwards()):
        if len(recent) < WINDOW:
            recent.append(rec)
        if isinstance(rec, BatchProgress) and len(batches) < WINDOW:
            batches.append(rec)
        if (len(recent) >= WINDOW and len(batches) >= WINDOW) or i >= MAX_SCAN:
            break
    tail = Tail(recent[::-1], batches[::-1])
    tail.facts = progress_facts(tail.batches)
    return tail


def progress_facts(batches: list[BatchProgress]) -> dict[str, Any]:
    """The numbers of the last batch (and the watermark over the recent ones)."""
    last = batches[-1] if batches else None
    dropped = [b.dropped_by_watermark for b in batches]
    pts = bm.points(batches)
    end = pts[-1] if pts else {}
    return {
        "last_batch_id": last.batch_id if last else None,
        "last_batch_at": iso(last.time) if last else None,
        "last_batch_time": last.time if last else None,
        "input_rows": last.num_input_rows if last else None,
        "input_rows_per_second": last.input_rows_per_second if last else None,
        "processed_rows_per_second": last.processed_rows_per_second if last else None,
        "batch_duration_ms": end.get("batch_duration_ms"),
        "state_keys": end.get("state_keys"),
        "state_keys_counted": ("keys" if last.keys is not None else "state_rows") if last else None,
        "state_memory_bytes": end.get("state_memory_bytes"),
        "watermark": _newest(batches, bm.watermark),
        "watermark_delay_seconds": end.get("watermark_delay_seconds"),
        "dropped_by_watermark": end.get("dropped_by_watermark"),
        "dropped_by_watermark_recent": sum(d for d in dropped if d) if batches else None,
        "recent_batches": len(batches),
        "lag": bm.source_lag(last) if last else None,
    }


def _tail(checkpoint: str) -> Tail:
    local = paths.local_path(log_uri(checkpoint))
    return memoised("tail", checkpoint, stat(local), lambda: read_tail(checkpoint))


def status(spec: JobSpec, tail: Tail, now: float) -> tuple[str, str, list[str]]:
    """(status, reason, warnings) from the supervisor's own verdicts."""
    try:
        who = lock.holder(spec.checkpoint)
    except UserError:  # a remote checkpoint: no lock to probe from here
        who = None
    alive = who is not None
    if not tail.recent and not alive:
        return "never_run", "no progress recorded yet", []
    th = Thresholds.from_spec(spec.supervise, spec.trigger.interval_seconds)
    h = assess(tail.recent, alive, th, now=now, holder=who)
    if h.verdict == "dead" and spec.mode == "catch-up":
        return "idle", "catch-up job between runs: the next run starts on its schedule", h.warnings
    return (
        {"healthy": "running", "starting": "running"}.get(h.verdict, h.verdict),
        h.reason,
        h.warnings,
    )


def quarantine(spec: JobSpec) -> dict[str, Any]:
    """Rows quarantined over the job query's last batches (of its latest run), and the rows
    those batches read: the rate of bad input lines. (Checkpoints of earlier releases kept a
    quarantine query of their own under ``_statekeeper/quarantine``: its log is read then.)"""
    legacy = paths.join(spec.checkpoint, paths.STATEKEEPER_DIR, paths.QUARANTINE_CHECKPOINT)
    local = paths.local_path(log_uri(legacy))
    ckpt = legacy if local is not None and local.exists() else spec.checkpoint
    sig = (
        stat(paths.local_path(log_uri(ckpt))),
        stat(paths.local_path(delta.log_uri(spec.quarantine))),
    )
    return memoised("quarantine", ckpt, sig, lambda: _quarantine(spec, ckpt))


def _quarantine(spec: JobSpec, ckpt: str) -> dict[str, Any]:
    batches = read_tail(ckpt).batches
    if batches:
        batches = [b for b in batches if b.run_id == batches[-1].run_id]
    if not batches:
        return {"quarantined": None, "quarantined_rows": None, "quarantine_input_rows": None}
    per_epoch = _rows_per_epoch(spec.quarantine)
    qid = batches[-1].id
    rows = sum(per_epoch.get((qid, b.batch_id), 0) for b in batches)
    read = sum(b.num_input_rows for b in batches)
    return {
        "quarantined": round(rows / read, 6) if read else None,
        "quarantined_rows": rows,
        "quarantine_input_rows": read,
    }


def _rows_per_epoch(table: str) -> dict[tuple[str, int], int]:
    """(query id, batch id) -> rows the streaming write of that batch committed: Delta's
    streaming sink says so in ``commitInfo``; the job's batch writer in a ``txn`` action (app id
    = the query id, version = the batch id)."""
    out: dict[tuple[str, int], int] = {}
    for c in _newest_local_commits(table, WINDOW * 2):
        rows = int(c.metrics.get("numOutputRows") or 0)
        params = c.parameters
        if "epochId" in params and params.get("queryId") is not None:
            out[(str(params["queryId"]), int(params["epochId"]))] = rows
        for app, batch in c.txns.items():
            out[(app, batch)] = rows
    return out


def checkpoint_verdict(spec: JobSpec, now: float) -> dict[str, Any]:
    from spark_jobs.checkpoints import unread
    from spark_jobs.checkpoints.validate import validate_checkpoint

    local = paths.local_path(spec.checkpoint)
    if local is None:
        return {"checkpoint_verdict": None, "checkpoint_findings": [], "unread_landing_files": None}
    sig = (
        *(stat(local / d) for d in ("", "offsets", "commits", "state")),
        int(now // CHECKPOINT_TTL),  # snapshot age findings change with time alone
    )

    def compute() -> dict[str, Any]:
        try:
            rep = validate_checkpoint(spec.checkpoint, spec)
        except UserError:  # it changed under every look: no verdict this refresh, not a 500
            return {
                "checkpoint_verdict": None,
                "checkpoint_findings": [],
                "unread_landing_files": None,
            }
        verdict = rep.to_dict()["status"] if rep.exists else "none"
        return {
            "checkpoint_verdict": verdict,
            "checkpoint_findings": rep.codes,
            # landing files the job never read (docs/jobs.md, "Landing files": each one is read)
            "unread_landing_files": unread.count(
                spec.checkpoint, spec.inputs.values(), spec.max_files_per_trigger
            ),
        }

    return memoised("checkpoint", spec.checkpoint, sig, compute)


def _newest_local_commits(table: str, n: int) -> list[delta.Commit]:
    """The newest ``n`` commits of a local table; none of a remote one, whose log the page does
    not read (its files are never memoised, so each request would pay the store's requests)."""
    return [] if paths.local_path(table) is None else delta.commits(table, newest=n)


def quality_verdict(spec: JobSpec) -> dict[str, Any]:
    """The last quality run's verdict (fail > warn > pass) from the results table's newest
    commit: one run appends its rows in one commit."""
    table = paths.results_uri(spec.output)
    log = paths.local_path(delta.log_uri(table))
    return memoised("quality", table, stat(log), lambda: _last_quality(table))


def _last_quality(table: str) -> dict[str, Any]:
    for c in reversed(_newest_local_commits(table, 5)):
        files = delta.added_files(table, c)
        if not files:
            continue
        import pyarrow.parquet as pq

        rows = pq.ParquetDataset(files).read(columns=["status", "run_time"]).to_pylist()
        statuses = {r["status"] for r in rows}
        verdict = next((s for s in ("fail", "warn", "pass") if s in statuses), None)
        run_time = max((r["run_time"] for r in rows if r["run_time"] is not None), default=None)
        return {
            "quality_verdict": verdict,
            "quality_checks": len(rows),
            "quality_failed": sum(r["status"] != "pass" for r in rows),
            "quality_run_at": iso(run_time.timestamp()) if run_time else None,
        }
    return {
        "quality_verdict": None,
        "quality_checks": 0,
        "quality_failed": 0,
        "quality_run_at": None,
    }


def table_care(spec: JobSpec) -> dict[str, Any]:
    """Live files and their average size of the output and the quarantine (a ``deltalake``
    snapshot read, again only after a new commit), and when ``table maintain`` last finished."""
    out: dict[str, Any] = {}
    for role, table in (("table", spec.output), ("quarantine", spec.quarantine)):
        log = paths.local_path(delta.log_uri(table))
        stats = None
        if log is not None:  # a remote table's log is not read here (see _newest_local_commits)
            stats = memoised("files", table, stat(log), lambda t=table: delta.live_files(t))
        out[f"{role}_files"] = stats.files if stats else None
        out[f"{role}_average_file_bytes"] = stats.average_bytes if stats else None
    path = paths.local_path(maintenance.location(spec.checkpoint))
    last = memoised(
        "maintenance", spec.checkpoint, stat(path), lambda: maintenance.read(spec.checkpoint)
    )
    out["last_maintenance_at"] = last.finished if last else None
    return out


def last_plan(spec: JobSpec) -> dict[str, Any]:
    """The last ``upgrade plan`` of the job's checkpoint (the DAGs make one before each submit):
    its worst verdict, line and way there while something changed, all None when nothing did."""
    path = paths.local_path(upgrade_plan.location(spec.checkpoint))
    last = memoised("plan", spec.checkpoint, stat(path), lambda: upgrade_plan.read(spec.checkpoint))
    changed = last is not None and last.worst is not None
    return {
        "upgrade_verdict": last.worst if changed else None,
        "upgrade_line": last.line if changed else None,
        "upgrade_next_step": last.next_step if changed else None,
        "upgrade_planned_at": last.planned_at if last else None,
    }


def iso(t: float | None) -> str | None:
    if t is None:
        return None
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _newest(batches: list[BatchProgress], fn) -> Any:
    return next((v for v in (fn(b) for b in reversed(batches)) if v is not None), None)


# -- rows ----------------------------------------------------------------------------------------
def job_row(spec: JobSpec, now: float | None = None) -> dict[str, Any]:
    """One job's health: the object ``GET /statekeeper/api/health`` lists."""
    now = time.time() if now is None else now
    tail = _tail(spec.checkpoint)
    st, reason, warnings = status(spec, tail, now)
    facts = dict(tail.facts)
    last_t = facts.pop("last_batch_time")
    row: dict[str, Any] = {
        "job": spec.name,
        "mode": spec.mode,
        "trigger": str(spec.trigger),
        "status": st,
        "reason": reason,
        "warnings": warnings,
        "seconds_since_last_batch": round(now - last_t, 1) if last_t else None,
        **facts,
    }
    row.update(quarantine(spec))
    row.update(checkpoint_verdict(spec, now))
    row.update(last_plan(spec))
    row.update(quality_verdict(spec))
    row.update(freshness.lags(spec, row.get("watermark"), row.get("lag"), now))
    row["freshness_breaches"] = freshness.breaches(spec, row)
    row["other_runs"] = job_runs.other_runs(spec, now)
    if st == "never_run" and row["other_runs"]:  # it ran, on a checkpoint of its own
        row["status"] = "idle"
        row["reason"] = (
            f"its live query has not run; it ran on {row['other_runs'][0]['checkpoint']}"
        )
    row.update(table_care(spec))
    return row


def health(now: float | None = None, jobs: list[JobSpec] | None = None) -> list[dict[str, Any]]:
    """One row per job of ``jobs`` (default: every spec)."""
    now = time.time() if now is None else now
    return [job_row(s, now) for s in (specs() if jobs is None else jobs)]
