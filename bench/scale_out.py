"""``python -m bench.scale_out --events N --keys K``: ``run sessions`` on a two-worker standalone
cluster vs ``local[2]``, same machine, same input, whole process (spark-submit to exit).

Both sides are the very command the DAGs submit (``spark-submit ... spark_jobs/__main__.py run
sessions --trigger available-now``), each on its own output and checkpoint; only ``--master``
differs. Rounds alternate (local, cluster, local, ...) so a change in the machine's load hits
both. Prints one JSON line per run and a summary line.
"""

from __future__ import annotations

import argparse
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
from spark_jobs.contract import paths
from spark_jobs.generate import generate


def submit_command(master: str, work: Path, side: str, driver_memory: str) -> list[str]:
    from spark_jobs.runtime.jars import jar_paths
    from statekeeper.package import spark_jobs_zip

    root = paths.project_root()
    return [
        str(Path(sys.executable).parent / "spark-submit"),
        "--master", master,
        "--name", f"bench-sessions-{side}",
        "--driver-memory", driver_memory,
        "--jars", ",".join(jar_paths()),
        "--py-files", spark_jobs_zip(),
        str(root / "spark_jobs" / "__main__.py"),
        "run", "sessions", "--trigger", "available-now",
        "--input", str(work / "landing"),
        "--output", str(work / side / "out"),
        "--checkpoint", str(work / side / "ckpt"),
    ]  # fmt: skip


def run_once(master: str, work: Path, side: str, driver_memory: str) -> dict[str, Any]:
    shutil.rmtree(work / side, ignore_errors=True)
    env = dict(
        os.environ,
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        STATEKEEPER_CHECKPOINT_ROOTS=str(work),  # the run's checkpoint lives under the work dir
    )
    started = time.perf_counter()
    proc = subprocess.run(
        submit_command(master, work, side, driver_memory),
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
        cwd=str(paths.project_root()),
    )
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
        raise SystemExit(f"statekeeper: {side} run failed (exit {proc.returncode}): {tail}")
    summary = json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1])
    return {
        "side": side,
        "seconds": round(seconds, 1),
        "input_rows": summary["input_rows"],
        "rows_written": summary["rows_written"],
        "batches": summary["batches"],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.scale_out", description=__doc__)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--worker-memory", default="2g")
    ap.add_argument("--driver-memory", default="2g")
    ap.add_argument("--work", type=Path, default=None, help="default: a temporary folder")
    a = ap.parse_args(argv)
    work = a.work or Path(tempfile.mkdtemp(prefix="scale-out-"))
    landing = work / "landing"
    if not landing.is_dir():
        generate("clickstream", str(landing), a.events, keys=a.keys, seed=1)
    c = clustermod.start(work / "cluster", workers=2, cores=1, memory=a.worker_memory)
    results: list[dict[str, Any]] = []
    try:
        for _ in range(a.rounds):
            for side, master in (("local", "local[2]"), ("cluster", c.url)):
                r = run_once(master, work, side, a.driver_memory)
                r["load_1m"] = round(os.getloadavg()[0], 1)
                results.append(r)
                print(json.dumps(r), flush=True)
        apps = c.master_json()["completedapps"]
        cores = {a["name"]: a["cores"] for a in apps}
    finally:
        clustermod.stop(work / "cluster")
    med = {
        s: statistics.median(r["seconds"] for r in results if r["side"] == s)
        for s in ("local", "cluster")
    }
    same = len({(r["input_rows"], r["rows_written"]) for r in results}) == 1
    print(
        json.dumps(
            {
                "events": a.events,
                "keys": a.keys,
                "rounds": a.rounds,
                "local_2_seconds": med["local"],
                "cluster_2x1_seconds": med["cluster"],
                "cluster_over_local": round(med["cluster"] / med["local"], 2),
                "same_rows_written": same,
                "cluster_app_cores": cores,
                "cpus": os.cpu_count(),
            }
        )  # fmt: skip
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
