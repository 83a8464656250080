"""How long after an hour's last event lands does its completeness entry appear (issue 27)?

``python -m bench.completeness_delay`` (or ``python -m bench --only completeness``) starts one
continuous run per job kind, side by side, as a user starts them (``python -m spark_jobs run
JOB --trigger processing-time:1s``), on one landing folder, then lands clickstream files whose
event time moves forward: ``--files-per-hour`` files per event-time hour, one every
``--hour-seconds / --files-per-hour`` wall seconds, so several hours complete in a few minutes.
For every hour it records the wall time the file holding the hour's last event landed (moved
into the folder whole) and the wall time the hour's key was written to the job's completeness
ledger (``<checkpoint>/_statekeeper/completeness.jsonl``: what the ``emit_completeness`` task
reads and emits), and prints, per job kind, the delay's median and maximum and what it is made
of (the job's progress log times its batches):

- ``event wait``: until a file lands whose events move the watermark past the hour's end plus
  the settling time (watermark = newest event time - the spec's delay, so the input must reach
  end + settling + delay); set by the feed's event-time speed, not by Statekeeper;
- ``pickup``: from that landing to the start of the batch that read it (the trigger interval,
  or the batch still running before it);
- ``data batch``: that batch's duration (it reads the events, but runs with the watermark the
  batch before it left: Spark moves a query's watermark between batches);
- ``next batch``: from its end to the entry: the next batch, which runs with the new watermark
  (a no-data batch when no file came), its duration, and the listener's append.

The Airflow side adds the supervisor's cadence (``emit_completeness`` after each watch) on top:
not measured here. Kinds: ``windows`` (windowed_counts: hour end), ``sessions`` (end + the
30-minute gap), ``end + delay`` (user_counts: hour end, the watermark delay alone).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from spark_jobs.contract import completeness as cp
from spark_jobs.contract import paths

KINDS = {"windowed_counts": "windows", "sessions": "sessions", "user_counts": "end + delay"}
START = datetime(2026, 3, 15, tzinfo=UTC).timestamp()  # event time of the first hour fed
USERS = 30
EVENT_TYPES = ("page_view", "checkout", "purchase")


@dataclass(frozen=True)
class Landed:
    """One landed file: when it was moved into the folder, and its newest event time."""

    wall: float
    max_event: float


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def land(land_dir: Path, staging: Path, n: int, lo: float, hi: float, events: int) -> Landed:
    """File ``n``: ``events`` clicks in event time [lo, hi), the last one at hi - 1 s, written
    beside the folder and moved in whole (a reader never sees half a file)."""
    rnd = random.Random(n)
    times = sorted([lo + rnd.random() * (hi - lo - 1) for _ in range(events - 1)] + [hi - 1])
    lines = [
        json.dumps(
            {
                "event_id": f"e{n}-{i}",
                "user_id": f"u{rnd.randrange(USERS)}",
                "event_type": EVENT_TYPES[i % 3],
                "page": "/p",
                "duration_sec": 1,
                "event_time": _iso(t),
            }
        )
        for i, t in enumerate(times)
    ]
    tmp = staging / f"part{n:04d}.json"
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, land_dir / tmp.name)
    return Landed(time.time(), hi - 1)


def start_run(job: str, work: Path, land_dir: Path, trigger: str) -> subprocess.Popen:
    root = paths.project_root()
    env = {
        **os.environ,
        "PYTHONPATH": f"{root}:{root / 'plugins'}",
        "STATEKEEPER_HOME": str(root),
        **paths.roots_env(work, land_dir.parent),
    }
    args = [
        sys.executable,
        "-m",
        "spark_jobs",
        "run",
        job,
        "--input",
        str(land_dir),
        "--output",
        str(work / job / "out"),
        "--checkpoint",
        str(work / job / "ckpt"),
        "--trigger",
        f"processing-time:{trigger}",
        "--run-for",
        "2 hours",
    ]
    log = open(work / f"{job}.log", "w")  # noqa: SIM115 (the process holds it until it ends)
    return subprocess.Popen(args, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)


def batches(ckpt: Path) -> list[dict[str, Any]]:
    """(start, end, newest event time) of each batch of the run, from its progress log."""
    from spark_jobs.runtime import progress

    out = []
    for r in progress.read_progress(str(ckpt)):
        start = _epoch(r["timestamp"])
        dur = float((r.get("durationMs") or {}).get("triggerExecution", 0)) / 1000
        mx = (r.get("eventTime") or {}).get("max")
        out.append(
            {
                "id": r["batchId"],
                "start": start,
                "end": start + dur,
                "dur": dur,
                "max_event": _epoch(mx) if mx else None,
                "rows": r.get("numInputRows", 0),
            }
        )
    return out


def measure_job(
    job: str, ckpt: Path, files: list[Landed], files_per_hour: int, hours: int
) -> list[dict[str, float]]:
    """Per measured hour: the delay and its parts (seconds)."""
    from spark_jobs.contract.spec import load_spec
    from spark_jobs.jobs import definition

    spec = load_spec(job)
    settle = float(definition(job).settles_after(spec))
    announced: dict[str, float] = {}
    for e in cp.read(str(ckpt)):
        for k in e.keys:
            announced.setdefault(k, e.written_at)
    runs = batches(ckpt)
    rows = []
    for h in range(hours):
        key = cp.partition_key(START + h * 3600)
        if key not in announced:
            continue
        last = files[(h + 1) * files_per_hour - 1]  # the file with the hour's last event
        need = START + (h + 1) * 3600 + settle + spec.watermark_seconds
        moving = next(f for f in files if f.max_event >= need)
        data = next(
            (b for b in runs if b["max_event"] is not None and b["max_event"] >= need), None
        )
        if data is None:  # announced by a batch whose progress line is not in the log
            continue
        rows.append(
            {
                "delay": announced[key] - last.wall,
                "event_wait": moving.wall - last.wall,
                "pickup": data["start"] - moving.wall,
                "data_batch": data["dur"],
                "next_batch": announced[key] - data["end"],
            }
        )
    return rows


def summarise(job: str, rows: list[dict[str, float]], hours: int, ckpt: Path) -> dict[str, Any]:
    def med(name: str) -> float:
        return round(statistics.median(r[name] for r in rows), 1) if rows else float("nan")

    durs = [b["dur"] for b in batches(ckpt)]
    return {
        "job": job,
        "kind": KINDS.get(job, job),
        "hours": len(rows),
        "of": hours,
        "delay_p50": med("delay"),
        "delay_max": round(max((r["delay"] for r in rows), default=float("nan")), 1),
        **{f"{k}_p50": med(k) for k in ("event_wait", "pickup", "data_batch", "next_batch")},
        "batch_p50": round(statistics.median(durs), 1) if durs else float("nan"),
        "batches": len(durs),
    }


def table(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    head = (
        f"{'kind':<13}{'job':<17}{'hours':>6}{'p50 s':>8}{'max s':>8}   made of (p50 s): "
        "event wait + pickup + data batch + next batch   (batch p50 s, batches)"
    )
    lines = [
        "",
        f"== completeness delay: last event landed -> ledger entry (trigger {args.trigger}, "
        f"1 event-time hour per {args.hour_seconds:g} s, {args.files_per_hour} files an hour) ==",
        head,
    ]
    for r in rows:
        lines.append(
            f"{r['kind']:<13}{r['job']:<17}{r['hours']:>3}/{r['of']:<2}{r['delay_p50']:>8}"
            f"{r['delay_max']:>8}   {r['event_wait_p50']} + {r['pickup_p50']} + "
            f"{r['data_batch_p50']} + {r['next_batch_p50']}   ({r['batch_p50']}, {r['batches']})"
        )
    lines.append(
        "(parts are medians over the hours, so they need not add up to the delay's median; "
        "the Airflow emit adds the supervisor's cadence on top)"
    )
    return "\n".join(lines)


def wait_for_first_batch(ckpts: list[Path], procs: list[subprocess.Popen], timeout: float) -> None:
    from spark_jobs.runtime import progress

    deadline = time.time() + timeout
    while time.time() < deadline:
        if any(p.poll() is not None for p in procs):
            raise RuntimeError("a run ended before its first batch: see its log in the work folder")
        if all(progress.read_progress(str(c)) for c in ckpts):
            return
        time.sleep(0.5)
    raise RuntimeError(f"no first batch within {timeout:g} s")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench.completeness_delay", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="two hours, one job")
    parser.add_argument("--jobs", default=",".join(KINDS), help="comma-separated jobs")
    parser.add_argument("--hours", type=int, default=5, help="event-time hours measured")
    parser.add_argument("--hour-seconds", type=float, default=30.0, help="wall s per event hour")
    parser.add_argument("--files-per-hour", type=int, default=6)
    parser.add_argument("--events-per-file", type=int, default=60)
    parser.add_argument("--trigger", default="1s", help="the runs' processing-time interval")
    parser.add_argument("--work", default=None, help="default .data/bench/completeness")
    args = parser.parse_args(argv)
    if args.smoke:
        args.hours, args.jobs = 2, "windowed_counts"
    jobs = args.jobs.split(",")
    root = Path(os.environ.get("STATEKEEPER_HOME") or paths.project_root())
    work = Path(args.work) if args.work else root / ".data" / "bench" / "completeness"
    shutil.rmtree(work, ignore_errors=True)
    land_dir, staging = work / "land", work / "staging"
    land_dir.mkdir(parents=True)
    staging.mkdir()
    step = 3600 / args.files_per_hour  # event seconds per file
    cadence = args.hour_seconds / args.files_per_hour  # wall seconds per file
    # One more hour than measured: its events move the watermark past the last measured hour
    # plus the longest settling time (sessions: 30 min + 10 min delay).
    total = (args.hours + 1) * args.files_per_hour
    print(f"completeness delay: {', '.join(jobs)}; work in {work}", flush=True)

    files = [land(land_dir, staging, 0, START, START + step, args.events_per_file)]
    procs = [start_run(j, work, land_dir, args.trigger) for j in jobs]
    ckpts = [work / j / "ckpt" for j in jobs]
    try:
        wait_for_first_batch(ckpts, procs, timeout=600)
        t0 = time.time()
        for n in range(1, total):
            time.sleep(max(0.0, t0 + n * cadence - time.time()))
            lo = START + n * step
            files.append(land(land_dir, staging, n, lo, lo + step, args.events_per_file))
        last_key = cp.partition_key(START + (args.hours - 1) * 3600)
        deadline = time.time() + 300
        while time.time() < deadline:  # until every run announced the last measured hour
            if all(any(last_key in e.keys for e in cp.read(str(c))) for c in ckpts):
                break
            time.sleep(1)
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)  # graceful: the run stops between batches
        for p in procs:
            try:
                p.wait(timeout=120)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    results = []
    for job, ckpt in zip(jobs, ckpts, strict=True):
        rows = measure_job(job, ckpt, files, args.files_per_hour, args.hours)
        results.append(summarise(job, rows, args.hours, ckpt))
    print(table(results, args), flush=True)
    out = {"params": vars(args), "jobs": results}
    (work / "results.json").write_text(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
