"""``python -m bench.delta_log_listing [--entries N] [--rounds R]``: a catch-up run on a table
whose log is a day old, with the project's log store for local tables and with Delta's own.

Delta finds a table's new commits by listing its ``_delta_log`` folder. A log keeps every commit
for ``delta.logRetentionDuration`` (the jobs' tables: their retention, a week by default; Delta's
own default is 30 days), about four entries each on a local disk (the commit, Delta's checksum,
Hadoop's hidden ``.crc`` of each): a job writing a batch a second holds about 360,000 after a
day. Delta's own store for local files reads every entry's status
per listing; the project's (``spark_jobs/io/jvm/statekeeper/LocalListLogStore.java``) reads
the names, then the status of the entries it returns.

Two identical ``user_counts`` deployments (landing folder, checkpoint, table) are set up by a
first run each; their output logs are then padded with N hidden ``.crc`` entries, the kind
Hadoop writes beside every commit (old commits' entries sort before the ones a listing
returns, as these do). Each round lands the same file in both and times ``python -m spark_jobs
run user_counts --trigger available-now`` on each, whole, the order alternating; the Delta side
is the same command with ``--conf spark.delta.logStore.file.impl=io.delta.storage.HDFSLogStore``
(the store Delta chooses for local files). The tables must end equal.
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
from typing import Any

from spark_jobs.contract import paths

ROOT = Path(__file__).resolve().parents[1]
DELTAS = "spark.delta.logStore.file.impl=io.delta.storage.HDFSLogStore"
DAY_OF_SECOND_BATCHES = 360_000  # 86,400 commits, ~4.2 log entries each (a checkpoint every 10)


def _click(n: int, i: int) -> str:
    return json.dumps(
        {
            "event_id": f"r{n}-{i}",
            "user_id": f"u{i % 50}",
            "event_type": ("page_view", "checkout", "purchase")[i % 3],
            "page": "/p",
            "duration_sec": 1,
            "event_time": f"2026-11-20T{n % 24:02d}:{i % 60:02d}:00Z",
        }
    )


def _land(folder: Path, n: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    part = folder / f".f{n:04d}.tmp"
    part.write_text("\n".join(_click(n, i) for i in range(200)) + "\n")
    part.rename(folder / f"f{n:04d}.json")


def _run(env: dict[str, str], side: Path, *extra: str) -> float:
    args = ["run", "user_counts", "--trigger", "available-now", "--input", str(side / "land")]
    args += ["--output", str(side / "out"), "--checkpoint", str(side / "ckpt"), *extra]
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "spark_jobs", *args],
        env=env,
        capture_output=True,
        text=True,
        cwd=side,
        check=False,
    )
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"run failed: {done.stderr.strip()[-500:]}")
    return took


def _pad(log: Path, entries: int) -> None:
    for i in range(entries):
        (log / f".{i:020d}.pad.crc").touch()


def _rows(table: Path) -> list[tuple[Any, ...]]:
    from deltalake import DeltaTable

    t = DeltaTable(str(table)).to_pyarrow_table(columns=["user_id", "total_events", "purchases"])
    return sorted(zip(*(t.column(c).to_pylist() for c in t.column_names), strict=True))


def measure(work: Path, entries: int, rounds: int) -> dict[str, Any]:
    sides = {"ours": work / "ours", "delta": work / "delta"}
    env = {**os.environ, **paths.roots_env(work)}
    extra = {"ours": (), "delta": ("--conf", DELTAS)}
    for name, side in sides.items():  # the same first run each, then the same padding
        _land(side / "land", 0)
        _run(env, side, *extra[name])
        _pad(side / "out" / "_delta_log", entries)
    times: dict[str, list[float]] = {name: [] for name in sides}
    for r in range(1, rounds + 1):
        order = list(sides) if r % 2 else list(reversed(sides))
        for name in order:
            _land(sides[name] / "land", r)
            times[name].append(_run(env, sides[name], *extra[name]))
            print(f"  round {r} {name}: {times[name][-1]:.1f} s", flush=True)
    same = _rows(sides["ours"] / "out") == _rows(sides["delta"] / "out")
    med = {name: statistics.median(t) for name, t in times.items()}
    return {
        "entries": entries,
        "rounds": rounds,
        "seconds": times,
        "median_s": med,
        "delta_over_ours": round(med["delta"] / med["ours"], 2),
        "same_table": same,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(prog="python -m bench.delta_log_listing", description=__doc__)
    ap.add_argument("--entries", type=int, default=DAY_OF_SECOND_BATCHES)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--smoke", action="store_true", help="20,000 entries, one round")
    args = ap.parse_args(argv)
    entries, rounds = (20_000, 1) if args.smoke else (args.entries, args.rounds)
    with tempfile.TemporaryDirectory(prefix="statekeeper-log-listing-") as tmp:
        out = measure(Path(tmp), entries, rounds)
    m = out["median_s"]
    print(
        f"run user_counts, output log of {entries:,} entries: Delta's store {m['delta']:.1f} s, "
        f"ours {m['ours']:.1f} s: {out['delta_over_ours']}x (medians of {rounds}; "
        f"same table: {out['same_table']})",
        flush=True,
    )
    return out


if __name__ == "__main__":
    main()
