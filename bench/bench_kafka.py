"""``run sessions`` from a 3-partition Kafka topic vs from files: the same events, side by side.

A local broker (the cached jars, a free loopback port, a temporary home, always stopped) gets the
clickstream from ``generate --out kafka://...``, which also keeps the very files it sent: those
files are the folder-side input. Each round runs the sessions job on both inputs, alternating,
each on a fresh checkpoint and table in one shared Spark session; the tables must be identical.

    python -m bench --only kafka            # or: python -m bench.bench_kafka [--events N] [--rounds R]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any


def _timed_run(spark: Any, spec: Any) -> float:
    from spark_jobs.jobs.runner import run_job

    t = time.perf_counter()
    run_job(spec, spark=spark)
    return time.perf_counter() - t


def _rows(spark: Any, uri: str) -> list[tuple]:
    return [tuple(r) for r in spark.read.format("delta").load(uri).orderBy("session_id").collect()]


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m bench.bench_kafka", description=__doc__)
    p.add_argument("--events", type=int, default=200_000)
    p.add_argument("--keys", type=int, default=None, help="users (default events/20)")
    p.add_argument("--rounds", type=int, default=2, help="alternating rounds (median kept)")
    p.add_argument("--smoke", action="store_true", help="tiny and fast (10,000 events, one round)")
    args = p.parse_args(argv)
    if args.smoke:
        args.events, args.rounds = 10_000, 1

    from bench.local_topic import clickstream_topic
    from spark_jobs.contract.spec import load_spec
    from spark_jobs.runtime.session import build_session

    with clickstream_topic("statekeeper-bench-kafka-", args.events, args.keys, seed=11) as topic:
        tmp, uri = topic.tmp, topic.uri
        folder = str(Path(topic.report.files[0]).parent)  # the same events, as generate kept
        spark = build_session("statekeeper-bench-kafka")
        base = load_spec("sessions")
        secs: dict[str, list[float]] = {"kafka": [], "files": []}
        tables: dict[str, list[tuple]] = {}
        for r in range(args.rounds):
            for name, inp in (("kafka", uri), ("files", folder))[:: 1 if r % 2 == 0 else -1]:
                run = tmp / f"{name}-{r}"
                spec = base.with_overrides(
                    output=str(run / "out"),
                    checkpoint=str(run / "ckpt"),
                    trigger="available-now",
                )
                # the topic as a spec naming it would give it (--input may not name a cluster)
                spec = replace(spec, inputs={"clickstream": inp}, path=base.path)
                secs[name].append(_timed_run(spark, spec))
                if r == 0:
                    tables[name] = _rows(spark, spec.output)
        spark.stop()
        kafka_s, files_s = statistics.median(secs["kafka"]), statistics.median(secs["files"])
        out = {
            "events": args.events,
            "partitions": 3,
            "rounds": args.rounds,
            "kafka_seconds": round(kafka_s, 2),
            "files_seconds": round(files_s, 2),
            "kafka_events_per_s": round(args.events / kafka_s),
            "files_events_per_s": round(args.events / files_s),
            "ratio_kafka_over_files": round(kafka_s / files_s, 2),
            "sessions": len(tables["files"]),
            "same_table": tables["kafka"] == tables["files"],
        }
        print(
            f"run sessions, {args.events:,} events: 3-partition topic {out['kafka_seconds']:.1f} s "
            f"({out['kafka_events_per_s']:,} ev/s) | files {out['files_seconds']:.1f} s "
            f"({out['files_events_per_s']:,} ev/s) | kafka/files {out['ratio_kafka_over_files']:.2f}x"
            f" | same table: {out['same_table']}",
            flush=True,
        )
        print(json.dumps(out))
        return out


if __name__ == "__main__":
    main()
