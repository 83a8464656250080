"""``python -m bench.delta_log_listing [--entries N] [--rounds R]``: a catch-up run on a table
whose log is a day old, with the project's log store for local tables and with Delta's own.

Delta finds a table's new commits by listing its ``_delta_log`` folder. A log keeps every commit
for ``delta.logRetentionDuration`` (the jobs' tables: their retention, a week by default; Delta's
own default is 30 days), about four entries each on a local disk (the commit, Delta's checksum,
Hadoop's hidden ``.crc`` of each): a job writing a batch a second holds about 360,000 after a
day. Delta's own store for local files reads every entry's status per listing; the project's
(``spark_jobs/io/jvm/statekeeper/LocalListLogStore.java``) reads the names, then the status of
the entries it returns.

Two identical ``user_counts`` deployments (landing folder, checkpoint, table) are set up by a
first run each; their output logs are then padded with N hidden ``.crc`` entries, the kind
Hadoop writes beside every commit (old commits' entries sort before the ones a listing
returns, as these do). Each round lands the same file in both and times ``python -m spark_jobs
run user_counts --trigger available-now`` on each, whole, the order alternating; the Delta side
is the same command with ``--conf spark.delta.logStore.file.impl=io.delta.storage.HDFSLogStore``
(the store Delta chooses for local files). The tables must end equal.

``--continuous SECONDS`` then times what a supervised job lives with: each side runs ``run
user_counts --trigger processing-time:1s`` for that long, alone on the machine (ours, Delta's,
Delta's, ours), a file landing every 2 s, and the median micro-batch with input
(``durationMs.triggerExecution`` of its progress record, the first three left out) is compared.
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

from bench.upgrade_migrate import ROOT, timed_cli
from spark_jobs.contract import jvm, paths

DELTAS = f"{jvm.LOG_STORE_CONF}=io.delta.storage.HDFSLogStore"  # Delta's choice for local files
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
    return timed_cli(env, *args)[0]


def _pad(log: Path, entries: int) -> None:
    for i in range(entries):
        (log / f".{i:020d}.pad.crc").touch()


def _rows(table: Path) -> list[tuple[Any, ...]]:
    from deltalake import DeltaTable

    t = DeltaTable(str(table)).to_pyarrow_table(columns=["user_id", "total_events", "purchases"])
    return sorted(zip(*(t.column(c).to_pylist() for c in t.column_names), strict=True))


def _continuous(env: dict[str, str], side: Path, seconds: int, first: int, *extra: str) -> float:
    """The median batch with input of a continuous run of ``seconds`` on ``side``."""
    from spark_jobs.contract.progress_log import BatchProgress, ProgressLog

    args = ["run", "user_counts", "--trigger", "processing-time:1s", "--run-for", f"{seconds}s"]
    args += ["--input", str(side / "land"), "--output", str(side / "out")]
    args += ["--checkpoint", str(side / "ckpt"), *extra]
    log = ProgressLog(str(side / "ckpt"))
    seen = {r.batch_id for r in log.forwards() if isinstance(r, BatchProgress)}
    err = side / "continuous.err"  # a file, not a pipe: nothing reads it while the run runs
    with err.open("w") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "spark_jobs", *args],
            env=env,
            cwd=side,
            stdout=subprocess.DEVNULL,
            stderr=fh,
        )
        n = first
        while proc.poll() is None:
            _land(side / "land", n)
            n += 1
            time.sleep(2.0)
    if proc.returncode != 0:
        raise SystemExit(f"continuous run failed: {err.read_text().strip()[-500:]}")
    batches = [
        r.duration_ms.get("triggerExecution", 0.0) / 1000
        for r in log.forwards()
        if isinstance(r, BatchProgress) and r.num_input_rows > 0 and r.batch_id not in seen
    ][3:]
    if not batches:
        raise SystemExit(f"no batch with input after the first three in {seconds} s: run longer")
    return statistics.median(batches)


def measure(work: Path, entries: int, rounds: int, continuous: int = 0) -> dict[str, Any]:
    sides = {"ours": work / "ours", "delta": work / "delta"}
    env = {
        **os.environ,
        **paths.roots_env(work),
        # the continuous runs start in their side's folder: the project must be importable there
        "PYTHONPATH": f"{ROOT}:{ROOT / 'plugins'}",
        "STATEKEEPER_HOME": str(ROOT),
        "PYSPARK_PYTHON": sys.executable,
    }
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
    out: dict[str, Any] = {
        "entries": entries,
        "rounds": rounds,
        "seconds": times,
        "median_s": med,
        "delta_over_ours": round(med["delta"] / med["ours"], 2),
        "same_table": same,
    }
    if continuous:
        batches: dict[str, list[float]] = {name: [] for name in sides}
        for k, name in enumerate(("ours", "delta", "delta", "ours")):
            got = _continuous(env, sides[name], continuous, 1000 * (k + 1), *extra[name])
            batches[name].append(got)
            print(f"  continuous {name}: median batch {got:.2f} s", flush=True)
        mb = {name: statistics.mean(b) for name, b in batches.items()}
        out["continuous"] = {"median_batch_s": batches, "mean_of_medians_s": mb}
        out["continuous"]["delta_over_ours"] = round(mb["delta"] / mb["ours"], 2)
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(prog="python -m bench.delta_log_listing", description=__doc__)
    ap.add_argument("--entries", type=int, default=DAY_OF_SECOND_BATCHES)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--continuous", type=int, default=0, metavar="SECONDS")
    ap.add_argument("--smoke", action="store_true", help="20,000 entries, one round")
    args = ap.parse_args(argv)
    entries, rounds = (20_000, 1) if args.smoke else (args.entries, args.rounds)
    with tempfile.TemporaryDirectory(prefix="statekeeper-log-listing-") as tmp:
        out = measure(Path(tmp), entries, rounds, 0 if args.smoke else args.continuous)
    m = out["median_s"]
    print(
        f"run user_counts, output log of {entries:,} entries: Delta's store {m['delta']:.1f} s, "
        f"ours {m['ours']:.1f} s: {out['delta_over_ours']}x (medians of {rounds}; "
        f"same table: {out['same_table']})",
        flush=True,
    )
    if "continuous" in out:
        c = out["continuous"]["mean_of_medians_s"]
        print(
            f"continuous run user_counts, 1 s trigger: median batch Delta's store "
            f"{c['delta']:.2f} s, ours {c['ours']:.2f} s: {out['continuous']['delta_over_ours']}x",
            flush=True,
        )
    return out


if __name__ == "__main__":
    main()
