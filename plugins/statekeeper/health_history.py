"""A job's progress history for the health page's charts and the API: points parsed once per
log and followed as it grows, downsampled over a range, and the records older than the log holds
(rotated away) read back from the event log."""

from __future__ import annotations

import bisect
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from spark_jobs.contract import delta, events, paths
from spark_jobs.contract.progress_log import BatchProgress, Follower, ProgressLog, ProgressRecord
from spark_jobs.contract.spec import JobSpec
from statekeeper import batch_metrics as bm
from statekeeper.health_memo import memoised, stat
from statekeeper.health_report import iso


@dataclass
class _History:
    follower: Follower
    newest_event: float | None = None
    points: list[dict[str, Any]] = field(default_factory=list)


HISTORIES = 8  # logs whose parsed history is kept (about 1 MB per 1,000 batches)
_histories: OrderedDict[str, _History] = OrderedDict()


def history_points(checkpoint: str) -> list[dict[str, Any]]:
    """Chart points of every batch of a progress log (its rotated files included), oldest
    first. Parsed once, then only the lines appended since are read (across a rotation); a log
    replaced or truncated is read again."""
    h = _histories.pop(checkpoint, None)
    if h is None:
        h = _History(ProgressLog(checkpoint).follow(from_start=True))
    new = h.follower.read_new()
    if h.follower.restarted:
        h.points, h.newest_event = [], None
    for rec in new:
        if not isinstance(rec, BatchProgress):
            continue
        t = bm.newest_event_seconds(rec)
        if t is not None:
            h.newest_event = t if h.newest_event is None else max(h.newest_event, t)
        h.points.append(bm.point(rec, h.newest_event))
    _histories[checkpoint] = h
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
    if last is not None:  # the newest batches: read back from the end
        records = ProgressLog(spec.checkpoint).tail(last, since=since, until=until)
        raw = with_older(
            spec, [r.raw for r in records if isinstance(r, BatchProgress)], last, since, until
        )
        pts = bm.points(_typed(raw))  # the older ones come from the event log
    else:  # a time range: from the job's cached history, extended by what was appended since
        pts = history_points(spec.checkpoint)
        times = [p["t"] or 0.0 for p in pts]
        lo = bisect.bisect_left(times, since) if since is not None else 0
        hi = bisect.bisect_right(times, until) if until is not None else len(pts)
        older = older_records(spec, times[0] if times else None, since, until, None)
        pts = bm.points(_typed(older)) + pts[lo:hi]
    return {
        "job": spec.name,
        "since": iso(since),
        "until": iso(until),
        "batches": len(pts),
        "downsampled": len(pts) > points,
        "points": bm.downsample(pts, points),
    }


# -- history older than the progress log ---------------------------------------------------------
def older_records(
    spec: JobSpec,
    oldest: float | None,
    since: float | None,
    until: float | None,
    limit: int | None,
) -> list[dict[str, Any]]:
    """Batch records of ``spec`` older than ``oldest`` (the oldest the progress log still holds;
    None: it holds none) in [since, until], from the event log: the history rotation dropped."""
    if since is not None and oldest is not None and since >= oldest:
        return []  # the progress log covers the range
    log = stat(paths.local_path(delta.log_uri(events.default_table())))
    # one memo per job (its latest question), so varying ranges never pile up
    sig = (log, (oldest, since, until, limit))
    return list(
        memoised(
            "events",
            spec.checkpoint,
            sig,
            lambda: events.progress_records(spec.checkpoint, oldest, since, until, limit),
        )
    )


def with_older(
    spec: JobSpec,
    records: list[dict[str, Any]],
    limit: int | None,
    since: float | None,
    until: float | None,
) -> list[dict[str, Any]]:
    """``records`` (the newest of the progress log, oldest first), preceded by older ones from
    the event log when the progress log has fewer than ``limit`` in the range."""
    if limit is not None and len(records) >= limit:
        return records
    first = ProgressRecord.from_json(records[0]) if records else None
    oldest = first.time if first is not None else _oldest_logged(spec)
    more = None if limit is None else limit - len(records)
    return older_records(spec, oldest, since, until, more) + records


def _oldest_logged(spec: JobSpec) -> float | None:
    """The oldest batch time the progress log holds (None when it holds none)."""
    for rec in ProgressLog(spec.checkpoint).history():
        if isinstance(rec, BatchProgress):
            return rec.time
    return None


def _typed(raw: list[dict[str, Any]]) -> list[BatchProgress]:
    """The batch records among ``raw`` (parsed progress lines, as the event log gives them)."""
    typed = (ProgressRecord.from_json(r) for r in raw)
    return [r for r in typed if isinstance(r, BatchProgress)]
