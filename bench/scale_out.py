"""``python -m bench.scale_out --events N --keys K``: ``run sessions`` on a two-worker standalone
cluster vs ``local[2]``, same machine, same input, whole process (spark-submit to exit).

Both sides are the command the DAGs submit (``statekeeper.spark_submit``: ``spark-submit --master
M ... spark_jobs/__main__.py run sessions --trigger available-now``, plus ``--driver-memory``),
each on its own output and checkpoint; only ``--master`` differs. Rounds alternate (local,
cluster, local, ...) so a change in the machine's load hits both. Prints one JSON line per run
(with the 1-minute load average at its end and, on the cluster, the executors each worker ran)
and a summary line with the medians and whether every run wrote the same table. The cluster is
stopped and a temporary work folder removed however the run ends.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from scripts import cluster as clustermod
from spark_jobs.contract.env import cli_env
from spark_jobs.generate import generate

JOB = "sessions"


def submit_command(master: str, work: Path, side: str, env: dict[str, str]) -> list[str]:
    """The DAGs' spark-submit line (one builder: ``SparkTarget.command``) for ``side``'s run."""
    from spark_jobs.contract.jvm import jar_paths
    from statekeeper.package import spark_jobs_zip
    from statekeeper.spark_submit import SparkTarget, application

    args = [
        "run",
        JOB,
        "--trigger",
        "available-now",
        "--input",
        str(work / "landing" / "clickstream"),
        "--output",
        str(work / "tables" / side),
        "--checkpoint",
        str(work / "checkpoints" / side),
    ]
    return SparkTarget(master).command(
        application(),
        args,
        name=f"statekeeper-{JOB}",
        py_files=spark_jobs_zip(),
        jars=",".join(jar_paths()),
        path=env["PATH"],
    )


def table_digest(table: Path) -> tuple[int, str]:
    """Rows and a digest of the Delta table's content, independent of file and row order."""
    from deltalake import DeltaTable

    rows = sorted(
        repr(sorted(r.items())) for r in DeltaTable(str(table)).to_pyarrow_table().to_pylist()
    )
    h = hashlib.sha256()
    for row in rows:
        h.update(row.encode())
    return len(rows), h.hexdigest()[:16]


def run_once(
    master: str, work: Path, side: str, label: str, driver_memory: str, timeout: float
) -> dict[str, Any]:
    for folder in ("tables", "checkpoints"):
        shutil.rmtree(work / folder / side, ignore_errors=True)
    env = cli_env({"STATEKEEPER_DATA": str(work)})  # the roots: <work>/landing, tables, ...
    cmd = submit_command(master, work, side, env)
    cmd[1:1] = ["--driver-memory", driver_memory]
    log = work / "logs" / f"{label}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.run(
            cmd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=out,
            text=True,
            timeout=timeout,
            cwd=env["STATEKEEPER_HOME"],
        )
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        lines = log.read_text(errors="replace").strip().splitlines() or ["?"]
        reason = next((ln for ln in reversed(lines) if "statekeeper:" in ln), lines[-1])
        raise RuntimeError(f"{side} run failed (exit {proc.returncode}): {reason.strip()}")
    summary = json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1])
    rows, digest = table_digest(work / "tables" / side)
    return {
        "side": side,
        "master": master,
        "seconds": round(seconds, 1),
        "input_rows": summary["input_rows"],
        "rows_written": summary["rows_written"],
        "batches": summary["batches"],
        "table_rows": rows,
        "table_digest": digest,
        "load_1m": round(os.getloadavg()[0], 1),
    }


def app_ids(c: clustermod.Cluster) -> set[str]:
    """Every application the master knows, running or completed."""
    status = c.master_json()
    return {str(a["id"]) for a in status["activeapps"] + status["completedapps"]}


def executors_per_worker(c: clustermod.Cluster, before: set[str], wait: float = 30.0) -> list[int]:
    """How many executors each worker ran for the applications new since ``before`` (every run's
    application is named ``statekeeper-JOB``). The master files an application a moment after
    spark-submit exits: wait for that (bounded)."""
    deadline = time.time() + wait
    while True:
        ids = app_ids(c) - before
        counts = []
        for ui in c.worker_webuis:
            w = clustermod.fetch_json(f"{ui}/json/")
            ex = w.get("executors", []) + w.get("finishedexecutors", [])
            counts.append(sum(1 for e in ex if e.get("appid") in ids))
        if all(counts) or time.time() > deadline:
            return counts
        time.sleep(1)


def measure(a: argparse.Namespace, work: Path) -> dict[str, Any]:
    landing = work / "landing" / "clickstream"
    if not landing.is_dir():
        generate("clickstream", str(landing), a.events, keys=a.keys, seed=1)
    c = clustermod.start(work / "cluster", workers=2, cores=1, memory=a.worker_memory)
    results: list[dict[str, Any]] = []
    try:
        for i in range(1, a.rounds + 1):
            for side, master in (("local", "local[2]"), ("cluster", c.url)):
                before = app_ids(c)
                r = run_once(master, work, side, f"{side}-{i}", a.driver_memory, a.timeout)
                if side == "cluster":
                    r["executors_per_worker"] = executors_per_worker(c, before)
                results.append({"round": i, **r})
                print(json.dumps(results[-1]), flush=True)
    finally:
        clustermod.stop(work / "cluster")
    med = {
        s: statistics.median(r["seconds"] for r in results if r["side"] == s)
        for s in ("local", "cluster")
    }
    return {
        "events": a.events,
        "keys": a.keys,
        "rounds": a.rounds,
        "local_2_seconds": med["local"],
        "cluster_2x1_seconds": med["cluster"],
        "cluster_over_local": round(med["cluster"] / med["local"], 2),
        "same_table": len({(r["table_rows"], r["table_digest"]) for r in results}) == 1,
        "rows_written": sorted({r["rows_written"] for r in results}),
        "load_1m": [r["load_1m"] for r in results],
        "cpus": os.cpu_count(),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.scale_out", description=__doc__)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--worker-memory", default="2g", help="each worker's budget for its executor")
    ap.add_argument("--driver-memory", default="2g", help="both sides (local[2]: all the work)")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per run")
    ap.add_argument(
        "--work",
        type=Path,
        default=None,
        help="keep input (reused when present), tables and logs here; default: a temporary "
        "folder, removed at the end",
    )
    a = ap.parse_args(argv)
    work = (a.work or Path(tempfile.mkdtemp(prefix="scale-out-"))).resolve()
    try:
        print(json.dumps(measure(a, work)), flush=True)
    except (RuntimeError, TimeoutError, OSError, subprocess.TimeoutExpired) as exc:
        kept = f" (logs: {work / 'logs'})" if a.work else ""
        print(f"statekeeper: scale-out benchmark failed: {exc}{kept}", file=sys.stderr)
        return 1
    finally:
        if a.work is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
