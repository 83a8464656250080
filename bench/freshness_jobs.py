"""Where a small ``user_counts`` batch's ``foreachBatch`` time goes (issue 30, item 3), in process.

``python -m bench.freshness_jobs --files 5`` lands ``--files`` small files (the freshness bench's
lines: background users plus a marker), runs ``run user_counts --trigger available-now`` in this
process with one file per batch, and prints per batch: the seconds of the whole ``foreachBatch``
function, the seconds inside its Delta writes (``sinks.side_by_side``: the two tables' writes
together, wall time), and every Spark job that ran meanwhile with its stages (call site /
tasks). What is left of the batch's seconds after the jobs is the driver's (py4j round trips,
plan building, checks). Timing only: nothing in the job changes; the figures are noisy on a
shared machine (read the proportions and the job counts).
"""

from __future__ import annotations

import argparse
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.freshness import lines_for
from spark_jobs.contract import paths


def jobs_between(sc: Any, first: int, end: int) -> list[str]:
    """One line per Spark job ``first <= id < end``: id, status and its stages' call sites."""
    tracker = sc.statusTracker()
    out = []
    for jid in range(first, end):
        info = tracker.getJobInfo(jid)
        if info is None:
            continue
        stages = [tracker.getStageInfo(s) for s in info.stageIds]
        names = [f"{s.name.split(' at ')[0]}/{s.numTasks}t" for s in stages if s is not None]
        out.append(f"  job {jid} {info.status}: {', '.join(names) or '(no stages)'}")
    return out


def summary(batches: list[dict[str, Any]]) -> str:
    """The per-batch rows and the medians after the first batch (a fresh process's first batch
    pays for start-up)."""
    rows = [
        f"batch {b['batch']}: {b['seconds']:.2f} s, in writes {b['writes']:.2f} s, "
        f"{len(b['jobs'])} Spark jobs"
        for b in batches
    ]
    rest = batches[1:] or batches
    if rest:
        med = sorted(rest, key=lambda b: b["seconds"])[len(rest) // 2]
        rows.append(
            f"median after the first: {med['seconds']:.2f} s, in writes {med['writes']:.2f} s, "
            f"{len(med['jobs'])} Spark jobs"
        )
    return "\n".join(rows)


def _instrument(batches: list[dict[str, Any]]) -> None:
    from spark_jobs.io import sinks

    in_writes = [0.0]
    side_by_side = sinks.side_by_side  # a batch's writes, together: wall time, not their sum

    def timed_writes(*a: Any, **k: Any) -> None:
        t0 = time.perf_counter()
        try:
            side_by_side(*a, **k)
        finally:
            in_writes[0] += time.perf_counter() - t0

    make = sinks.make_batch_writer

    def make_timed(*a: Any, **k: Any) -> Callable[[Any, int], None]:
        write_batch = make(*a, **k)

        def timed(batch: Any, batch_id: int) -> None:
            sc = batch.sparkSession.sparkContext
            scheduler = sc._jsc.sc().dagScheduler()
            first, in_writes[0] = scheduler.nextJobId(), 0.0
            t0 = time.perf_counter()
            write_batch(batch, batch_id)
            seconds = time.perf_counter() - t0
            jobs = jobs_between(sc, first, scheduler.nextJobId())
            batches.append(
                {"batch": batch_id, "seconds": seconds, "writes": in_writes[0], "jobs": jobs}
            )
            print(f"batch {batch_id}: {seconds:.2f} s", *jobs, sep="\n", flush=True)

        return timed

    sinks.side_by_side = timed_writes  # type: ignore[assignment]
    sinks.make_batch_writer = make_timed  # type: ignore[assignment]


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(prog="python -m bench.freshness_jobs", description=__doc__)
    parser.add_argument("--files", type=int, default=5, help="files, one batch each")
    parser.add_argument("--events", type=int, default=20, help="background events per file")
    parser.add_argument("--work", default=".data/bench/freshness_jobs")
    args = parser.parse_args(argv)
    work = paths.project_root() / args.work
    shutil.rmtree(work, ignore_errors=True)
    land, specs = work / "landing", work / "specs"
    land.mkdir(parents=True)
    specs.mkdir()
    for n in range(args.files):
        (land / f"f{n:04d}.json").write_text("\n".join(lines_for(n, args.events)) + "\n")
    spec = (paths.project_root() / "include" / "jobs" / "user_counts.yaml").read_text()
    (specs / "user_counts.yaml").write_text(spec + "max_files_per_trigger: 1\n")

    import os

    os.environ["STATEKEEPER_SPECS"] = str(specs)
    os.environ.update(paths.roots_env(work))  # its landing folder, table and checkpoint
    batches: list[dict[str, Any]] = []
    _instrument(batches)
    from spark_jobs.cli import main as cli

    rc = cli(
        [
            "run",
            "user_counts",
            "--input",
            str(land),
            "--output",
            str(Path(work) / "out"),
            "--checkpoint",
            str(Path(work) / "checkpoint"),
            "--trigger",
            "available-now",
        ]
    )
    text = summary(batches)
    print(text if rc == 0 else f"run exited {rc}\n{text}")
    return text


if __name__ == "__main__":
    main()
