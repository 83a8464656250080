"""Two checkouts of this project, the same command, the same input, side by side.

What a user waits for is the whole ``python -m spark_jobs run JOB`` process, so that is what is
timed: for each round, each checkout (in rotating order) runs the job on a fresh output and
checkpoint over the same landing folder, and the wall time of the whole process is kept. The
median per checkout and their ratio are printed; the two output tables are compared by row count.

    python -m bench.bench_revisions --old ../statekeeper-old --job fraud_alerts --events 1000000

``--old`` and ``--new`` are checkouts (``git worktree add ../statekeeper-old <rev>``); each runs
with its own code (cwd and ``STATEKEEPER_HOME``) and this venv.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from spark_jobs.contract import paths

ROOT = Path(__file__).resolve().parents[1]
KIND = {"sessions": "clickstream", "fraud_alerts": "auth", "user_counts": "clickstream"}


def run(checkout: Path, job: str, land: Path, work: Path) -> tuple[float, dict]:
    env = {
        **os.environ,
        "STATEKEEPER_HOME": str(checkout),
        "PYTHONPATH": f"{checkout}:{checkout / 'plugins'}",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        **paths.roots_env(work, land.parent),  # the run's folders, as an operator adds theirs
    }
    args = [
        sys.executable,
        "-m",
        "spark_jobs",
        "run",
        job,
        "--input",
        str(land),
        "--output",
        str(work / "out"),
        "--checkpoint",
        str(work / "ckpt"),
        "--trigger",
        "available-now",
    ]
    t0 = time.perf_counter()
    done = subprocess.run(args, cwd=checkout, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode:
        raise SystemExit(f"{checkout}: run {job} failed: {done.stderr.strip()[-400:]}")
    return wall, json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", type=Path, required=True)
    ap.add_argument("--new", type=Path, default=ROOT)
    ap.add_argument("--job", default="fraud_alerts", choices=sorted(KIND))
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args(argv)
    from spark_jobs.generate import generate

    with tempfile.TemporaryDirectory(prefix="sk-bench-rev-") as tmp:
        land = Path(tmp) / "land"
        generate(KIND[a.job], str(land), a.events, keys=a.keys, seed=7)
        walls: dict[str, list[float]] = {"old": [], "new": []}
        rows: dict[str, int] = {}
        for r in range(a.rounds):
            order = [("old", a.old), ("new", a.new)][:: (1 if r % 2 == 0 else -1)]
            for label, checkout in order:
                work = Path(tmp) / f"{label}-{r}"
                wall, summary = run(checkout.resolve(), a.job, land, work)
                walls[label].append(wall)
                rows[label] = int(summary.get("rows_written") or 0)
                print(
                    f"  round {r + 1} {label:>3}: {wall:7.1f} s  {summary.get('rows_written')} rows",
                    flush=True,
                )
        old, new = statistics.median(walls["old"]), statistics.median(walls["new"])
        print(
            json.dumps(
                {
                    "job": a.job,
                    "events": a.events,
                    "keys": a.keys,
                    "rounds": walls,
                    "old_median_s": round(old, 1),
                    "new_median_s": round(new, 1),
                    "new_vs_old_speed": round(old / new, 2),
                    "rows": rows,
                }
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
