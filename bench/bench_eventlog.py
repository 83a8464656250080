"""What the event log costs a batch: the same small run with the log off and on, side by side.

A ``sessions`` run over ``--batches`` landing files of ``--events`` events each (one file per
micro-batch), in one Spark session, alternating ``STATEKEEPER_EVENT_LOG=0`` and ``=1`` for
``--rounds`` rounds. Printed per side: the median batch duration (Spark's ``triggerExecution``,
first batch left out: it plans and compiles) and, with the log on, the seconds its writer thread
worked per batch (deriving rows, appending with deltalake), which it does beside the batches, not
in them. The target: the log's cost below 5 % of a 100-event batch.

    python -m bench.bench_eventlog [--batches 12] [--events 100] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any


def one_run(spark: Any, root: Path, batches: int, events: int, log_on: bool) -> dict[str, Any]:
    from spark_jobs.contract import events as event_log
    from spark_jobs.contract.spec import load_spec
    from spark_jobs.generate import generate
    from spark_jobs.jobs.runner import run_job
    from spark_jobs.runtime import progress

    land = root / "land"
    for seed in range(batches):
        generate("clickstream", str(land), events, keys=max(1, events // 10), seed=seed)
    os.environ["STATEKEEPER_DATA"] = str(root / "data")
    os.environ["STATEKEEPER_EVENT_LOG"] = "1" if log_on else "0"
    spec = load_spec("sessions").with_overrides(
        input=str(land),
        output=str(root / "out"),
        checkpoint=str(root / "ckpt"),
        trigger="available-now",
    )
    run_job(replace(spec, max_files_per_trigger=1, shuffle_partitions=2), spark=spark)
    recs = progress.read_progress(str(root / "ckpt"))
    durations = [float(r["durationMs"]["triggerExecution"]) for r in recs[1:]]
    out = {"batches": len(recs), "median_ms": statistics.median(durations)}
    if log_on:
        (stop,) = event_log.read(job="sessions", kind="stop")
        out["log_ms_per_batch"] = 1000 * event_log.details(stop)["event_log_seconds"] / len(recs)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.bench_eventlog")
    p.add_argument("--batches", type=int, default=12)
    p.add_argument("--events", type=int, default=100)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args(argv)
    from spark_jobs.runtime.session import build_session

    spark = build_session("bench-eventlog", conf={"spark.sql.shuffle.partitions": "2"})
    runs: dict[bool, list[dict[str, Any]]] = {False: [], True: []}
    try:
        for _ in range(args.rounds):
            for log_on in (False, True):  # interleaved: drift hits both sides alike
                root = Path(tempfile.mkdtemp(prefix="bench-eventlog-"))
                try:
                    runs[log_on].append(one_run(spark, root, args.batches, args.events, log_on))
                finally:
                    shutil.rmtree(root, ignore_errors=True)
    finally:
        spark.stop()
    off = statistics.median(r["median_ms"] for r in runs[False])
    on = statistics.median(r["median_ms"] for r in runs[True])
    work = statistics.median(r["log_ms_per_batch"] for r in runs[True])
    print(f"sessions, {args.events}-event batches, {args.batches} batches x {args.rounds} rounds")
    print(f"{'':<28}{'log off':>10}{'log on':>10}")
    print(
        f"{'median batch (ms)':<28}{off:>10.0f}{on:>10.0f}   difference {100 * (on - off) / off:+.1f} %"
    )
    print(
        f"{'log thread work / batch (ms)':<28}{'-':>10}{work:>10.1f}   = {100 * work / off:.1f} % of a batch, beside it"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
