"""The streaming health of every job, from files only: progress logs, checkpoint metadata, the
quarantine and quality tables' Delta logs. No Spark, no Airflow: the page and its API call this.

Everything is read from the end of the files and memoised on the files' stat (size, mtime), so a
request over many jobs with long histories costs a few small reads per job.
"""

from __future__ import annotations

import bisect
import json
import os
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from spark_jobs.contract import delta, maintenance, paths
from spark_jobs.contract.errors import UserError
from spark_jobs.contract.spec import JobSpec, list_jobs, load_spec
from spark_jobs.runtime import lock, progress, progress_tail
from statekeeper import batch_metrics as bm
from statekeeper.health import Thresholds, assess

WINDOW = 20  # recent batches the status, the dropped rows and the quarantine rate look at
MAX_SCAN = 2000  # lines read back at most to find them (a long idle stretch logs idle lines)
CHECKPOINT_TTL = 60.0  # seconds a checkpoint verdict is reused while its folders are unchanged

_memo: dict[tuple[str, str], tuple[Any, Any]] = {}


REMOTE = None  # the signature of a file on an object store: never memoised


def _stat(path: Path | None) -> tuple[int, int] | None:
    """(mtime, size) of a local file, (0, -1) when it does not exist, REMOTE for a URL."""
    if path is None:
        return REMOTE
    try:
        st = os.stat(path)
    except OSError:
        return 0, -1
    return st.st_mtime_ns, st.st_size


def _memoised(kind: str, key: str, signature: Any, compute) -> Any:
    """``compute()`` again only when the files' ``signature`` changed (always for remote files,
    whose stat costs a request)."""
    if signature is REMOTE or (isinstance(signature, tuple) and REMOTE in signature):
        return compute()
    hit = _memo.get((kind, key))
    if hit is not None and hit[0] == signature:
        return hit[1]
    value = compute()
    _memo[(kind, key)] = (signature, value)
    return value


# -- job specs -----------------------------------------------------------------------------------
def specs() -> list[JobSpec]:
    """Every job spec, parsed again only when a spec file changed."""
    folder = paths.specs_dir()
    names = list_jobs(folder)
    sig = tuple((n, _stat(folder / f"{n}.yaml")) for n in names)
    return _memoised("specs", str(folder), sig, lambda: [load_spec(n, folder) for n in names])


def spec_of(job: str) -> JobSpec:
    """The spec of ``job``; UserError (one line, naming the known jobs) when there is none."""
    for spec in specs():
        if spec.name == job:
            return spec
    return load_spec(job)  # raises the loader's own message for an unknown job


# -- the parts of a row --------------------------------------------------------------------------
@dataclass
class Tail:
    recent: list[dict[str, Any]]  # the newest records, idle ones included, oldest first
    batches: list[dict[str, Any]]  # the newest batch records, oldest first
    facts: dict[str, Any] = field(default_factory=dict)  # the row's numbers (progress_facts)


def read_tail(checkpoint: str) -> Tail:
    recent: list[dict[str, Any]] = []
    batches: list[dict[str, Any]] = []
    for i, rec in enumerate(progress_tail.backwards(checkpoint)):
        if len(recent) < WINDOW:
            recent.append(rec)
        if not progress.is_idle(rec) and len(batches) < WINDOW:
            batches.append(rec)
        if (len(recent) >= WINDOW and len(batches) >= WINDOW) or i >= MAX_SCAN:
            break
    tail = Tail(recent[::-1], batches[::-1])
    tail.facts = progress_facts(tail.batches)
    return tail


def progress_facts(batches: list[dict[str, Any]]) -> dict[str, Any]:
    """The numbers of the last batch (and the watermark over the recent ones)."""
    last = batches[-1] if batches else {}
    last_t = progress_tail.record_time(last) if last else None
    dropped = [bm.dropped_by_watermark(b) for b in batches]
    pts = bm.points(batches)
    return {
        "last_batch_id": last.get("batchId"),
        "last_batch_at": _iso(last_t),
        "last_batch_time": last_t,
        "input_rows": last.get("numInputRows"),
        "input_rows_per_second": last.get("inputRowsPerSecond"),
        "processed_rows_per_second": last.get("processedRowsPerSecond"),
        "batch_duration_ms": pts[-1]["batch_duration_ms"] if pts else None,
        "state_keys": pts[-1]["state_keys"] if pts else None,
        "state_keys_counted": ("keys" if isinstance(last.get("keys"), dict) else "state_rows")
        if last
        else None,
        "state_memory_bytes": pts[-1]["state_memory_bytes"] if pts else None,
        "watermark": _newest(batches, bm.watermark),
        "watermark_delay_seconds": pts[-1]["watermark_delay_seconds"] if pts else None,
        "dropped_by_watermark": pts[-1]["dropped_by_watermark"] if pts else None,
        "dropped_by_watermark_recent": sum(d for d in dropped if d) if batches else None,
        "recent_batches": len(batches),
        "lag": bm.source_lag(last) if last else None,
    }


def _tail(checkpoint: str) -> Tail:
    local = paths.local_path(progress.progress_path(checkpoint))
    return _memoised("tail", checkpoint, _stat(local), lambda: read_tail(checkpoint))


def status(spec: JobSpec, tail: Tail, now: float) -> tuple[str, str, list[str]]:
    """(status, reason, warnings) from the supervisor's own verdicts."""
    try:
        alive = lock.holder(spec.checkpoint) is not None
    except UserError:  # a remote checkpoint: no lock to probe from here
        alive = False
    if not tail.recent and not alive:
        return "never_run", "no progress recorded yet", []
    th = Thresholds.from_spec(spec.supervise, spec.trigger.interval_seconds)
    h = assess(tail.recent, alive, th, now=now)
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
    local = paths.local_path(progress.progress_path(legacy))
    ckpt = legacy if local is not None and local.exists() else spec.checkpoint
    sig = (
        _stat(paths.local_path(progress.progress_path(ckpt))),
        _stat(paths.local_path(delta.log_uri(spec.quarantine))),
    )
    return _memoised("quarantine", ckpt, sig, lambda: _quarantine(spec, ckpt))


def _quarantine(spec: JobSpec, ckpt: str) -> dict[str, Any]:
    batches = read_tail(ckpt).batches
    if batches:
        batches = [b for b in batches if b.get("runId") == batches[-1].get("runId")]
    if not batches:
        return {"quarantined": None, "quarantined_rows": None, "quarantine_input_rows": None}
    per_epoch = _rows_per_epoch(spec.quarantine)
    qid = str(batches[-1].get("id"))
    rows = sum(per_epoch.get((qid, int(b.get("batchId", -1))), 0) for b in batches)
    read = sum(int(b.get("numInputRows") or 0) for b in batches)
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
    from spark_jobs.checkpoints.validate import validate_checkpoint

    local = paths.local_path(spec.checkpoint)
    if local is None:
        return {"checkpoint_verdict": None, "checkpoint_findings": []}
    sig = (
        *(_stat(local / d) for d in ("", "offsets", "commits", "state")),
        int(now // CHECKPOINT_TTL),  # snapshot age findings change with time alone
    )

    def compute() -> dict[str, Any]:
        rep = validate_checkpoint(spec.checkpoint, spec)
        verdict = rep.to_dict()["status"] if rep.exists else "none"
        return {"checkpoint_verdict": verdict, "checkpoint_findings": rep.codes}

    return _memoised("checkpoint", spec.checkpoint, sig, compute)


def _newest_local_commits(table: str, n: int) -> list[delta.Commit]:
    """The newest ``n`` commits of a local table; none of a remote one, whose log the page does
    not read (its files are never memoised, so each request would pay the store's requests)."""
    return [] if paths.local_path(table) is None else delta.commits(table, newest=n)


def quality_verdict(spec: JobSpec) -> dict[str, Any]:
    """The last quality run's verdict (fail > warn > pass) from the results table's newest
    commit: one run appends its rows in one commit."""
    from spark_jobs.quality.results import results_uri

    table = results_uri(spec.output)
    log = paths.local_path(delta.log_uri(table))
    return _memoised("quality", table, _stat(log), lambda: _last_quality(table))


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
            "quality_run_at": _iso(run_time.timestamp()) if run_time else None,
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
            stats = _memoised("files", table, _stat(log), lambda t=table: delta.live_files(t))
        out[f"{role}_files"] = stats.files if stats else None
        out[f"{role}_average_file_bytes"] = stats.average_bytes if stats else None
    path = paths.local_path(maintenance.location(spec.checkpoint))
    last = _memoised(
        "maintenance", spec.checkpoint, _stat(path), lambda: maintenance.read(spec.checkpoint)
    )
    out["last_maintenance_at"] = last.finished if last else None
    return out


def _iso(t: float | None) -> str | None:
    if t is None:
        return None
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _newest(batches: list[dict[str, Any]], fn) -> Any:
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
    row.update(quality_verdict(spec))
    row.update(table_care(spec))
    return row


def health(now: float | None = None) -> list[dict[str, Any]]:
    now = time.time() if now is None else now
    return [job_row(s, now) for s in specs()]


@dataclass
class _History:
    ino: int
    size: int = 0  # bytes parsed so far (whole lines only)
    newest_event: float | None = None
    points: list[dict[str, Any]] = field(default_factory=list)


HISTORIES = 8  # logs whose parsed history is kept (about 1 MB per 1,000 batches)
_histories: OrderedDict[Path, _History] = OrderedDict()


def history_points(log: Path) -> list[dict[str, Any]]:
    """Chart points of every batch of a local progress log, oldest first. Parsed once, then only
    the lines appended since are read; a log rewritten or replaced is read again."""
    try:
        st = os.stat(log)
    except FileNotFoundError:
        return []
    h = _histories.pop(log, None)
    if h is None or h.ino != st.st_ino or st.st_size < h.size:
        h = _History(st.st_ino)
    if st.st_size > h.size:
        with open(log, "rb") as fh:
            fh.seek(h.size)
            data = fh.read(st.st_size - h.size)
        end = data.rfind(b"\n") + 1  # a line still being written waits for the next read
        for line in data[:end].split(b"\n"):
            try:
                rec = json.loads(line) if line.strip() else None
            except ValueError:
                continue
            if not isinstance(rec, dict) or progress.is_idle(rec):
                continue
            t = bm.newest_event_seconds(rec)
            if t is not None:
                h.newest_event = t if h.newest_event is None else max(h.newest_event, t)
            h.points.append(bm.point(rec, h.newest_event))
        h.size += end
    _histories[log] = h
    while len(_histories) > HISTORIES:
        _histories.popitem(last=False)
    return h.points


def series(
    spec: JobSpec,
    since: float | None = None,
    until: float | None = None,
    last: int | None = None,
    points: int = 300,
) -> dict[str, Any]:
    """Chart points of the job's batches in a time range (or its ``last`` batches), downsampled
    to at most ``points``."""
    local = paths.local_path(progress.progress_path(spec.checkpoint))
    if last is not None or local is None:  # the newest batches: read back from the end
        records = progress_tail.newest_records(
            spec.checkpoint, limit=last, since=since, until=until
        )
        pts = bm.points(records)
    else:  # a time range: from the job's cached history, extended by what was appended since
        pts = history_points(local)
        times = [p["t"] or 0.0 for p in pts]
        lo = bisect.bisect_left(times, since) if since is not None else 0
        hi = bisect.bisect_right(times, until) if until is not None else len(pts)
        pts = pts[lo:hi]
    return {
        "job": spec.name,
        "since": _iso(since),
        "until": _iso(until),
        "batches": len(pts),
        "downsampled": len(pts) > points,
        "points": bm.downsample(pts, points),
    }
