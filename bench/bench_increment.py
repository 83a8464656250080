"""``e2e-increment``: the catch-up a job runs every hour, timed as whole processes.

A sessions job that has read one day's file gets the next day's: ``python -m spark_jobs run
sessions`` on its checkpoint against :mod:`bench.builtin_pipeline` on its own (the pipeline a
user would hand-write), each having read the first day in the same way. The next day's file
holds the lines of the first with each event a day later (new sessions), and each run reads
exactly that file. Every round starts from the same saved state: the checkpoint and tables are
copied back to the very folders they were written in (a checkpoint is bound to its tables'
paths). Interleaved rounds, median kept, start-up included: at this size start-up and the first
batch's set-up are most of a run, which is what the 1M-event rows do not show.
"""

from __future__ import annotations

import json
import shutil
import statistics
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench import bench_e2e, suite

WHO = ("run", "builtin")


def _later(src: Path, dest: Path) -> None:
    """``src``'s lines with every ``event_time`` a day later; a line without one (the generator's
    bad lines) is copied as it is, so the next day holds as many bad lines."""
    out = []
    for line in src.read_text().splitlines():
        try:
            event = json.loads(line)
            t = datetime.fromisoformat(event["event_time"].replace("Z", "+00:00"))
        except (ValueError, TypeError, KeyError, AttributeError):
            out.append(line)
            continue
        event["event_time"] = (t + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        out.append(json.dumps(event))
    dest.write_text("\n".join(out) + "\n")


def _args(who: str, land: Path, d: Path) -> list[str]:
    out, ckpt = str(d / "out"), str(d / "ckpt")
    if who == "run":
        io = ["--input", str(land), "--output", out, "--checkpoint", ckpt]
        return ["-m", "spark_jobs", "run", "sessions", *io]
    return ["-m", "bench.builtin_pipeline", "sessions", str(land), out, ckpt]


def _rows(stdout: str) -> int:
    return int(json.loads(bench_e2e._summary_line(stdout))["input_rows"])


def increment(work: Path, events: int, keys: int, rounds: int) -> dict[str, Any]:
    """Both contenders' runs over a second day of ``events`` events (see the module)."""
    files = sorted(suite.dataset(work, "clickstream", events, keys).glob("*.json"))
    where = work / "e2e" / "sessions" / "increment"
    shutil.rmtree(where, ignore_errors=True)
    land = where / "land"
    land.mkdir(parents=True)
    for f in files:
        shutil.copy(f, land / f"day-1-{f.name}")
    for who in WHO:  # the state every round starts from: the first day read
        bench_e2e._process(_args(who, land, where / who), work)
        shutil.copytree(where / who, where / "saved" / who)
    for f in files:
        _later(f, land / f"day-2-{f.name}")
    lines = sum(len(f.read_text().splitlines()) for f in files)  # events and bad lines
    times: dict[str, list[float]] = {who: [] for who in WHO}
    for r in range(rounds):
        for who in WHO[:: 1 if r % 2 == 0 else -1]:
            shutil.rmtree(where / who)
            shutil.copytree(where / "saved" / who, where / who)
            wall, stdout = bench_e2e._process(_args(who, land, where / who), work)
            if _rows(stdout) != lines:
                raise RuntimeError(f"{who} read {_rows(stdout)} lines, not the new day's {lines}")
            times[who].append(round(wall, 2))
            print(f"  sessions increment round {r + 1} {who}: {wall:.1f} s", flush=True)
    run_s, builtin_s = statistics.median(times["run"]), statistics.median(times["builtin"])
    return {
        "job": "sessions",
        "events": events,
        "keys": keys,
        "rounds": rounds,
        "run_seconds": times["run"],
        "builtin_seconds": times["builtin"],
        "ratio_vs_builtin": round(builtin_s / run_s, 2),
    }


def line(r: dict[str, Any]) -> str:
    """The result as one line of the bench's table."""
    return (
        f"process sessions      increment {r['events']:>6,} new events {r['keys']:>6,} users: "
        f"run {r['run_seconds']} s, built-in {r['builtin_seconds']} s, "
        f"vs built-in {r['ratio_vs_builtin']:.2f}x"
    )
