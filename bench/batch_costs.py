"""Where a micro-batch's time goes: ``python -m bench --only batches``.

The ``sessions`` job is run the way users run it (``python -m spark_jobs run``, a fresh process
each time) on three arrivals: a large first one, then ~100 events five minutes later (the watermark
moves: sessions close), then ~100 events one second later (a no-data batch with nothing due).
Each batch's figures come from two records Spark writes anyway: the progress log (planning, the
write-ahead log, the offset commit, the whole batch) and Spark's event log (every job and stage
of the batch, with the task metrics the SQL operators report). Nothing is sampled or estimated:

- ``plan``: Spark's query planning for the batch;
- ``offsets``: finding the new files and writing the offset log and commit log;
- ``scan``: the stages that read and parse the new lines and write the shuffle;
- ``stateful``: the stage running the stateful operator (its Python, its state store), with the
  summed task metrics inside it: ``python`` (time the Python workers spent running the job's
  function), ``py_start`` (starting Python workers), ``state`` (state store load and commit);
- ``count``: the rest of the sink's counting job (after the stateful stage);
- ``delta_check``: Delta rebuilding a table snapshot's state (what its exactly-once check reads);
- ``write``: the Delta table writes (the jobs writing files);
- ``driver``: the rest of the batch (Delta's commits, the sink's Python callback, py4j).

Task metrics are summed over tasks that run two at a time, so they can add up to more than the
stage's wall time; the stage columns are wall time. ``start_up`` is a run's process time minus
its batches: JVM and Python start, checks, the first listing, the summary.
"""

from __future__ import annotations

import json
import random
import shutil
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from spark_jobs.contract import paths

_PYTHON = "time to execute Python code"
_PY_START = "time to start Python workers"
_STATE = ("RocksDB: load - time taken to load the store", "time to commit changes")


def _arrival(folder: Path, name: str, start: datetime, span_s: float, n: int, seed: int) -> None:
    """``n`` clickstream events from ``start`` over ``span_s`` seconds, as the generator writes them."""
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        t = start + timedelta(seconds=span_s * i / n)
        lines.append(
            json.dumps(
                {
                    "event_id": f"{name}-{i:05d}",
                    "user_id": f"u{rng.randrange(1000):06d}",
                    "event_type": rng.choice(["page_view", "page_view", "checkout", "purchase"]),
                    "page": f"/product/{rng.randrange(5)}",
                    "duration_sec": rng.randrange(300),
                    "event_time": t.strftime("%Y-%m-%dT%H:%M:%S.")
                    + f"{t.microsecond // 1000:03d}Z",
                }
            )
        )
    (folder / f"{name}.json").write_text("\n".join(lines) + "\n")


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _accumulated(tasks: list[dict[str, Any]], names: tuple[str, ...]) -> int:
    total = 0
    for t in tasks:
        for a in t["Task Info"].get("Accumulables", []):
            if a.get("Name") in names:
                total += int(a.get("Update") or 0)
    return total


def breakdown(event_log: Path, progress: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per batch of ``progress`` (records of one run) from that run's event log."""
    jobs: dict[int, dict[str, Any]] = {}
    stages: dict[int, dict[str, Any]] = {}
    tasks: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for e in _events(event_log):
        kind = e["Event"]
        if kind == "SparkListenerJobStart":
            props = e.get("Properties") or {}
            jobs[e["Job ID"]] = {
                "batch": props.get("streaming.sql.batchId"),
                "desc": props.get("spark.job.description") or "",
                "start": e["Submission Time"],
                "stages": e["Stage IDs"],
            }
        elif kind == "SparkListenerJobEnd" and e["Job ID"] in jobs:
            jobs[e["Job ID"]]["end"] = e["Completion Time"]
        elif kind == "SparkListenerStageCompleted":
            stages[e["Stage Info"]["Stage ID"]] = e["Stage Info"]
        elif kind == "SparkListenerTaskEnd":
            tasks[e["Stage ID"]].append(e)
    rows = []
    for rec in progress:
        d = rec.get("durationMs") or {}
        row: dict[str, Any] = {
            "batch": rec["batchId"],
            "rows": rec.get("numInputRows", 0),
            "written": (rec.get("keys") or {}).get("emitted"),
            "total": d.get("triggerExecution", 0),
            "plan": d.get("queryPlanning", 0),
            "scan": 0,
            "stateful": 0,
            "count": 0,
            "delta_check": 0,
            "write": 0,
            "python": 0,
            "py_start": 0,
            "state": 0,
        }
        in_jobs = 0
        for job in jobs.values():
            if job["batch"] != str(rec["batchId"]) or "end" not in job:
                continue
            wall = job["end"] - job["start"]
            in_jobs += wall
            done = [stages[s] for s in job["stages"] if s in stages]
            stateful = [s for s in done if _ran_state_store(tasks[s["Stage ID"]])]
            if "Compute snapshot" in job["desc"]:
                row["delta_check"] += wall
            elif stateful:
                s = stateful[0]
                st_wall = s["Completion Time"] - s["Submission Time"]
                row["stateful"] += st_wall
                before = [x for x in done if x["Stage ID"] < s["Stage ID"]]
                scan = sum(x["Completion Time"] - x["Submission Time"] for x in before)
                row["scan"] += scan
                row["count"] += max(wall - st_wall - scan, 0)
                ts = tasks[s["Stage ID"]]
                row["python"] += _accumulated(ts, (_PYTHON,))
                row["py_start"] += _accumulated(ts, (_PY_START,))
                row["state"] += _accumulated(ts, _STATE)
            else:
                row["write"] += wall
        row["offsets"] = sum(
            d.get(k, 0) for k in ("latestOffset", "getBatch", "walCommit", "commitOffsets")
        )
        row["driver"] = max(row["total"] - row["plan"] - row["offsets"] - in_jobs, 0)
        rows.append(row)
    return rows


def off_batch_ms(event_log: Path) -> int:
    """Job time outside any batch: Delta's check rebuilt in the background
    (:mod:`spark_jobs.io.delta_txns`), overlapping the batches rather than adding to them."""
    starts: dict[int, int] = {}
    total = 0
    for e in _events(event_log):
        props = e.get("Properties") or {}
        if e["Event"] == "SparkListenerJobStart" and "streaming.sql.batchId" not in props:
            starts[e["Job ID"]] = e["Submission Time"]
        elif e["Event"] == "SparkListenerJobEnd" and e["Job ID"] in starts:
            total += e["Completion Time"] - starts[e["Job ID"]]
    return total


def _ran_state_store(tasks: list[dict[str, Any]]) -> bool:
    """Whether these tasks ran the stateful operator (a stage reading the cached batch has the
    state store in its lineage too, but commits nothing)."""
    return any(
        a.get("Name") == "time to commit changes"
        for t in tasks
        for a in t["Task Info"].get("Accumulables", [])
    )


def _run(work: Path, data: Path, log_dir: Path) -> tuple[float, Path]:
    from bench.bench_e2e import _process

    log_dir.mkdir(parents=True, exist_ok=True)
    before = set(log_dir.iterdir())
    confs = {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": str(log_dir),
        "spark.eventLog.compress": "false",
        "spark.eventLog.rolling.enabled": "false",
    }
    args = [
        "-m",
        "spark_jobs",
        "run",
        "sessions",
        "--input",
        str(data),
        "--output",
        str(work / "out"),
        "--checkpoint",
        str(work / "ckpt"),
    ]
    for k, v in confs.items():
        args += ["--conf", f"{k}={v}"]
    wall, _ = _process(args, work)
    (new,) = set(log_dir.iterdir()) - before
    return wall, new


def measure(work: Path, events: int) -> list[dict[str, Any]]:
    """Three runs of ``sessions`` (a large arrival, +100 events 5 min later, +100 events 1 s
    later), every batch broken down."""
    from spark_jobs.generate import generate

    run_dir = work / "batches"
    shutil.rmtree(run_dir, ignore_errors=True)
    data = run_dir / "landing"
    info = generate("clickstream", str(data), events=events, keys=max(events // 20, 1), seed=6)
    latest = datetime.fromisoformat(info.last_event_time.replace("Z", "+00:00")).astimezone(UTC)
    arrivals = [
        ("first", None),
        ("+100 events, 5 min later", (latest + timedelta(minutes=5), 180.0)),
        ("+100 events, 1 s later", (latest + timedelta(minutes=8, seconds=1), 1.0)),
    ]
    results = []
    progress_path = run_dir / "ckpt" / paths.STATEKEEPER_DIR / "progress.jsonl"
    for i, (label, arrival) in enumerate(arrivals):
        if arrival is not None:
            _arrival(data, f"extra-{i}", arrival[0], arrival[1], 100, seed=i)
        seen = len(_events(progress_path)) if progress_path.exists() else 0
        wall, log = _run(run_dir, data, run_dir / "eventlog")
        records = [r for r in _events(progress_path)[seen:] if "durationMs" in r]
        batches = breakdown(log, records)
        in_batches = sum(b["total"] for b in batches) / 1000
        results.append(
            {
                "run": label,
                "process_s": round(wall, 1),
                "start_up_s": round(wall - in_batches, 1),
                "off_batch_s": round(off_batch_ms(log) / 1000, 1),
                "batches": batches,
            }
        )
        print(f"  run {label}: {wall:.1f} s, {len(batches)} batches", flush=True)
    return results


COLUMNS = ("plan", "offsets", "scan", "stateful", "count", "delta_check", "write", "driver")


def table(results: list[dict[str, Any]]) -> list[str]:
    lines = [
        "per batch, ms (stage and job walls; python/py_start/state are summed task metrics "
        "inside the stateful stage):",
        f"{'run / batch':<32}{'rows':>6}{'out':>5}{'total':>7}"
        + "".join(f"{c:>12}" for c in COLUMNS)
        + f"{'python':>8}{'py_start':>9}{'state':>7}",
    ]
    for r in results:
        lines.append(
            f"{r['run']}: process {r['process_s']} s, start-up {r['start_up_s']} s, "
            f"off-batch jobs {r['off_batch_s']} s"
        )
        for b in r["batches"]:
            lines.append(
                f"{'  batch ' + str(b['batch']):<32}{b['rows']:>6}{b['written'] or 0:>5}"
                f"{b['total']:>7}"
                + "".join(f"{b[c]:>12}" for c in COLUMNS)
                + f"{b['python']:>8}{b['py_start']:>9}{b['state']:>7}"
            )
    return lines
