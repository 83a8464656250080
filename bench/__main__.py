"""``python -m bench [--smoke] [--only NAME ...]``: run the benchmarks, print the tables, write JSON."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from bench import batch_costs

BENCHES = (
    "throughput",
    "executors",
    "catchup",
    "stores",
    "parse",
    "e2e",
    "e2e-kafka",
    "e2e-increment",
    "batches",
    "startup",
)
HELPERS = {
    "checkpoints": "bench.bench_checkpoints",
    "quality": "bench.bench_quality",
    "health-api": "bench.bench_health",
    "kafka": "bench.bench_kafka",
    "completeness": "bench.completeness_delay",
    "upgrade-migrate": "bench.upgrade_migrate",
    "freshness": "bench.freshness",
}

FULL: dict[str, Any] = {  # int, or list[int] for key_sweep
    "events": 1_000_000,
    "key_sweep": [1_000, 10_000, 100_000],
    "exec_events": 100_000,
    "exec_keys": 10_000,
    "catchup_events": 10_000_000,
    "catchup_keys": 100_000,
    "catchup_calls": 10,
    "catchup_files_per_batch": 2,
    "store_events": 1_000_000,
    "store_keys": 100_000,
    "store_files": 10,
    "parse_events": 1_000_000,
    "e2e_events": 1_000_000,
    "e2e_keys": 100_000,
    "increment_events": 2_000,
    "increment_keys": 100,
    "batch_events": 20_000,
}
# The smoke run (CI) proves each bench runs and its outputs agree, not a speed: its first contender
# pays the cold JVM and Python workers whatever the size, so the sizes are the least that still
# span several batches and buckets.
SMOKE: dict[str, Any] = {
    "events": 8_000,
    "key_sweep": [2_000],
    "exec_events": 4_000,
    "exec_keys": 400,
    "catchup_events": 16_000,
    "catchup_keys": 2_000,
    "catchup_calls": 2,
    "catchup_files_per_batch": 1,
    "store_events": 10_000,
    "store_keys": 1_000,
    "store_files": 3,
    "parse_events": 20_000,
    "e2e_events": 20_000,
    "e2e_keys": 2_000,
    "increment_events": 2_000,
    "increment_keys": 100,
    "batch_events": 20_000,
}


def _same(row: dict[str, Any]) -> str:
    """Whether the built-in job wrote the very table the batched one did ('-': not comparable)."""
    return str(row["same_table_as_builtin"]) if "same_table_as_builtin" in row else "-"


def table(results: dict[str, Any]) -> str:
    """The closing summary: one line per measured thing."""
    lines = [
        "",
        "== summary (events/s, median of interleaved rounds; ratio = batched / other) ==",
    ]
    if "throughput" in results:
        lines.append(
            f"{'job':<13}{'events':>10}{'users':>9}{'batched':>11}{'built-in':>11}{'count':>11}{'vs built-in':>13}{'vs count':>10}  same table"
        )
        for r in results["throughput"]:
            lines.append(
                f"{r['job']:<13}{r['events']:>10,}{r['keys']:>9,}{r['batched']['events_per_s']:>11,}"
                f"{r['builtin']['events_per_s']:>11,}{r['count']['events_per_s']:>11,}"
                f"{r['ratio_vs_builtin']:>12.2f}x{r['ratio_vs_count']:>9.2f}x  "
                f"{_same(r):<6} ({r['builtin_name']})"
            )
    for r in results.get("executors", []):
        lines.append(
            f"executors {r['job']}: per-key {r['per-key']['events_per_s']:,} ev/s, batched {r['batched']['events_per_s']:,} ev/s, "
            f"ratio {r['ratio']:.1f}x, identical outputs: {r['identical']}"
        )
    if "catchup" in results:
        c, mib = results["catchup"], 1024 * 1024
        lines.append(
            f"catch-up {c['events']:,} events: {c['seconds']:.1f} s ({c['events_per_s']:,} ev/s), peak RSS {c['peak_rss']['total'] / mib:,.0f} MiB "
            f"(JVM {c['peak_rss']['jvm'] / mib:,.0f} + Python {c['peak_rss']['python_workers'] / mib:,.0f}), "
            f"state at end {c['state_keys_end']:,} users / {c['state_rows_buckets']} buckets, bounded: {c['state_bounded']}"
        )
    if "parse" in results:
        r = results["parse"]
        lines.append(
            f"parse {r['events']:,} lines: alone {r['ours_seconds']} s vs Spark's JSON reader {r['native_seconds']} s, "
            f"{r['ratio_vs_native']:.2f}x; with the job's shuffle {r.get('ours_shuffled_seconds')} s vs reader + "
            f"the same shuffle {r.get('native_shuffled_seconds')} s, {r.get('ratio_vs_native_shuffled', 0):.2f}x (target <= 2x); "
            f"Spark's from_json alone on the lines {r.get('from_json_seconds')} s, {r.get('ratio_from_json_vs_native', 0):.2f}x the reader; "
            f"with {r.get('bad_rate', 0):.0%} bad lines {r.get('ours_bad_seconds')} s vs the reader {r.get('native_bad_seconds')} s, "
            f"{r.get('ratio_vs_native_bad', 0):.2f}x"
        )
    for r in [*results.get("e2e", []), *([results["e2e-kafka"]] if "e2e-kafka" in results else [])]:
        lines.append(
            f"process {r['job']:<13}{r.get('input', 'files'):<6}{r['events']:>10,} events {r['keys']:>8,} users: run {r['run_seconds']} s "
            f"({r['run_events_per_s']:,} ev/s), built-in {r['builtin_seconds']} s ({r['builtin_events_per_s']:,} ev/s), "
            f"vs built-in {r['ratio_vs_builtin']:.2f}x, same table: {_same(r)}"
            + (  # fraud_alerts: the sliding-window built-in, same rounds
                f"; sliding windows {r['sliding_seconds']} s, vs sliding {r['ratio_vs_sliding']:.2f}x"
                if "sliding_seconds" in r
                else ""
            )
        )
    if "e2e-increment" in results:
        from bench import bench_increment

        lines.append(bench_increment.line(results["e2e-increment"]))
    if "batches" in results:
        lines += batch_costs.table(results["batches"])
    if "startup" in results:
        r = results["startup"]
        lines.append(
            f"run with nothing new: driver class archive {r['archive_seconds']} s, without "
            f"{r['no_archive_seconds']} s: {r['ratio_no_archive_vs_archive']:.2f}x faster with it"
            + ("" if r["archive_used"] else " (NO ARCHIVE: run `make setup`)")
        )
    if "rows" in results.get("freshness", {}):
        from bench import freshness_report

        lines += freshness_report.table(results["freshness"]["rows"]).splitlines()[1:]
    for s in results.get("stores", []):
        lines.append(
            f"store {s['store']:<18} batch {s['batch_ms_median']} ms, commit {s['commit_ms_median']} ms, checkpoint {s['checkpoint_bytes_per_batch']:,} B/batch"
        )
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="a tiny, fast version (CI)")
    parser.add_argument(
        "--only",
        action="append",
        choices=[*BENCHES, *HELPERS],
        help="run this benchmark only (repeat it for several, e.g. --only e2e --only parse)",
    )
    parser.add_argument(
        "--skip-helpers", action="store_true", help="skip bench_checkpoints/quality"
    )
    parser.add_argument(
        "--events", type=int, help="events per throughput run (default 1M, smoke 8k)"
    )
    parser.add_argument(
        "--keys", help="users to sweep in the throughput runs, e.g. 100000 or 1000,10000"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        help="interleaved rounds per throughput contender, median kept (default 2, smoke 1)",
    )
    parser.add_argument(
        "--e2e-jobs", default="sessions,fraud_alerts", help="jobs timed as whole processes (e2e)"
    )
    parser.add_argument(
        "--work", default=None, help="where data and runs go (default .data/bench[-smoke])"
    )
    return parser


def _params(args: argparse.Namespace) -> dict[str, Any]:
    p = dict(SMOKE if args.smoke else FULL)
    if args.events:
        p["events"] = p["parse_events"] = p["e2e_events"] = p["batch_events"] = args.events
    if args.keys:
        p["key_sweep"] = [int(k) for k in args.keys.split(",")]
        p["e2e_keys"] = p["key_sweep"][-1]
    return p


def _heavy(name: str, wanted: list[str], args: argparse.Namespace) -> bool:
    """Whether to run a heavy bench: asked for, and not skipped by a smoke run of everything
    (CI), where whole-process rounds would cost minutes."""
    return name in wanted and not (args.smoke and not args.only)


def _in_session(
    spark: Any, wanted: list[str], args: argparse.Namespace, p: dict[str, Any], work: Path
) -> dict[str, Any]:
    """The benchmarks that time work inside one warm Spark session."""
    from bench import bench_e2e, stores, suite

    out: dict[str, Any] = {}
    if "throughput" in wanted:
        print("1. throughput against Spark's built-in aggregations", flush=True)
        out["throughput"] = suite.throughput(
            spark,
            work,
            p["events"],
            p["key_sweep"],
            warm_up=not args.smoke,
            fraud=not args.smoke,
            rounds=args.rounds or (1 if args.smoke else 2),
        )
    if "executors" in wanted:
        print("2. per-key executor against batched executor, identical input", flush=True)
        out["executors"] = suite.executors(spark, work, p["exec_events"], p["exec_keys"])
    if "catchup" in wanted:
        print("3. available-now catch-up through the runner", flush=True)
        out["catchup"] = suite.catch_up(
            spark,
            work,
            p["catchup_events"],
            p["catchup_keys"],
            p["catchup_calls"],
            p["catchup_files_per_batch"],
            n_probes=2 if args.smoke else 5,
        )
    if _heavy("stores", wanted, args):
        print("4. RocksDB with changelog checkpointing against the HDFS-backed store", flush=True)
        out["stores"] = stores.stores(
            spark, work, p["store_events"], p["store_keys"], p["store_files"]
        )
    if _heavy("parse", wanted, args):
        print("5. parse + validate + quarantine against Spark's JSON reader", flush=True)
        out["parse"] = bench_e2e.parse(
            spark, work, p["parse_events"], args.rounds or (1 if args.smoke else 3)
        )
    return out


def _whole_processes(
    wanted: list[str], args: argparse.Namespace, p: dict[str, Any], work: Path
) -> dict[str, Any]:
    """The benchmarks that time whole commands, each its own process."""
    from bench import bench_e2e, bench_increment

    out: dict[str, Any] = {}
    if _heavy("e2e", wanted, args):
        print(
            "6. whole processes: python -m spark_jobs run against a built-in pipeline", flush=True
        )
        jobs = tuple(args.e2e_jobs.split(","))
        rounds = args.rounds or (1 if args.smoke else 2)
        out["e2e"] = bench_e2e.e2e(work, p["e2e_events"], p["e2e_keys"], rounds, jobs)
    if _heavy("e2e-kafka", wanted, args):
        print(
            "6b. whole processes: run sessions from a Kafka topic against a built-in pipeline",
            flush=True,
        )
        rounds = args.rounds or (1 if args.smoke else 2)
        out["e2e-kafka"] = bench_e2e.e2e_kafka(work, p["e2e_events"], p["e2e_keys"], rounds)
    if _heavy("e2e-increment", wanted, args):
        print("6c. whole processes: an hourly catch-up of a day's new file (sessions)", flush=True)
        rounds = args.rounds or (1 if args.smoke else 3)
        out["e2e-increment"] = bench_increment.increment(
            work, p["increment_events"], p["increment_keys"], rounds
        )
    if _heavy("batches", wanted, args):
        print("7. where a micro-batch's time goes (sessions, three arrivals)", flush=True)
        out["batches"] = batch_costs.measure(work, p["batch_events"])
    if _heavy("startup", wanted, args):
        print("8. a run with nothing new, with and without the driver's class archive", flush=True)
        out["startup"] = bench_e2e.startup(work, args.rounds or 3)
    for name, module in HELPERS.items():
        if name not in wanted or args.skip_helpers:
            continue
        try:
            helper = importlib.import_module(module)
        except ModuleNotFoundError:
            continue
        got = helper.main(["--smoke"] if args.smoke else [])
        out[name] = got if isinstance(got, dict) else {"exit_code": got}
    return out


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from spark_jobs.contract import paths

    root = Path(os.environ.get("STATEKEEPER_HOME") or paths.project_root())
    default_work = root / ".data" / ("bench-smoke" if args.smoke else "bench")
    work = Path(args.work) if args.work else default_work
    work.mkdir(parents=True, exist_ok=True)
    p = _params(args)
    wanted = args.only or [*BENCHES, *HELPERS]
    results: dict[str, Any] = {
        "smoke": args.smoke,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "params": p,
    }
    from spark_jobs.runtime.session import build_session

    started = time.perf_counter()
    # the helpers and the whole-process benches start their own: no session when only they run
    in_session = set(BENCHES) - {"e2e", "e2e-kafka", "e2e-increment", "batches", "startup"}
    spark = build_session("statekeeper-bench") if set(wanted) & in_session else None
    try:
        results.update(_in_session(spark, wanted, args, p, work))
    finally:
        if spark is not None:
            spark.stop()
    results.update(_whole_processes(wanted, args, p, work))
    results["seconds"] = round(time.perf_counter() - started, 1)
    print(table(results), flush=True)
    out = root / "bench" / "results" / ("smoke.json" if args.smoke else "latest.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2, default=str))
    print(f"results: {out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
