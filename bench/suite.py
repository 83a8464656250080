"""The four benchmarks of issue 6. Each contender reads the same generated JSON-lines files through
the runner's own parse (text source -> ``parse_lines`` -> good events) and writes Delta with an
``availableNow`` trigger, in the one Spark session of the run."""

from __future__ import annotations

import shutil
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench import builtins
from bench.sampler import PeakRss
from spark_jobs.contract.spark_confs import spec_confs
from spark_jobs.contract.spec import JobSpec, load_spec
from spark_jobs.generate import generate
from spark_jobs.io import events as ev
from spark_jobs.io import sources

KIND = {"sessions": "clickstream", "fraud_alerts": "auth"}


def dataset(
    root: Path,
    kind: str,
    events: int,
    keys: int,
    files: int | None = None,
    calls: int = 1,
    bad_rate: float = 0.0,
) -> Path:
    """Generated input, made once and reused by later runs (a marker says it is complete);
    ``bad_rate`` of its lines spoiled as the generator spoils them."""
    name = f"{kind}-{events}-{keys}-{files or 0}-{calls}" + (f"-bad{bad_rate}" if bad_rate else "")
    folder = root / "data" / name
    if (folder / ".complete").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    for _ in range(calls):
        generate(
            kind,
            str(folder),
            events=events // calls,
            keys=keys,
            seed=6,
            files=files,
            bad_rate=bad_rate,
        )
    (folder / ".complete").write_text("ok")
    return folder


def job_spec(job: str, data: Path, work: Path, **changes: Any) -> JobSpec:
    spec = load_spec(job).with_overrides(
        input=str(data),
        output=str(work / "out"),
        checkpoint=str(work / "ckpt"),
        trigger="available-now",
    )
    return replace(spec, **changes)


def good_stream(spark: Any, spec: JobSpec) -> Any:
    kind = spec.kinds[0]
    return ev.good_events(ev.parse_lines(sources.read_lines(spark, spec, kind), kind), kind)


def run_query(spark: Any, df: Any, work: Path, mode: str = "append") -> dict[str, Any]:
    """Run ``df`` to Delta with availableNow; wall time, input rows, batches, rows written."""
    started = time.perf_counter()
    q = (
        df.writeStream.format("delta")
        .outputMode(mode)
        .option("checkpointLocation", str(work / "ckpt"))
        .trigger(availableNow=True)
        .start(str(work / "out"))
    )
    q.awaitTermination()
    wall = time.perf_counter() - started
    if q.exception() is not None:
        raise q.exception()
    progress = q.recentProgress
    rows = sum(int(p["numInputRows"]) for p in progress)
    written = spark.read.format("delta").load(str(work / "out")).count()
    return {
        "seconds": round(wall, 2),
        "input_rows": rows,
        "batches": len(progress),
        "events_per_s": round(rows / wall),
        "rows_out": written,
    }


# -- the contenders ---------------------------------------------------------------------------
def sessions_job(spark: Any, spec: JobSpec) -> Any:
    from spark_jobs.io import key_metrics
    from spark_jobs.jobs import sessions

    return key_metrics.data_rows(
        sessions.build(spark, spec, {"clickstream": good_stream(spark, spec)})
    )


def fraud_job(spark: Any, spec: JobSpec) -> Any:
    from spark_jobs.io import key_metrics
    from spark_jobs.jobs import fraud_alerts

    return key_metrics.data_rows(
        fraud_alerts.build(spark, spec, {"auth": good_stream(spark, spec)})
    )


def session_window(spark: Any, spec: JobSpec) -> Any:
    """The built-in sessions pipeline (:func:`bench.builtins.sessions_builtin`) over the files."""
    return builtins.sessions_builtin(good_stream(spark, spec), spec)


def failure_windows(spark: Any, spec: JobSpec) -> Any:
    """The built-in stand-in for fraud alerts: users with >= threshold failures in a window."""
    return builtins.fraud_builtin(good_stream(spark, spec), spec)


def count_floor(spark: Any, spec: JobSpec) -> Any:
    return good_stream(spark, spec).groupBy("user_id").count()


def _table_rows(spark: Any, uri: str) -> list[tuple]:
    df = spark.read.format("delta").load(uri)
    return sorted(tuple(tuple(v) if isinstance(v, list) else v for v in r) for r in df.collect())


def _contend(
    spark: Any,
    root: Path,
    job: str,
    data: Path,
    name: str,
    build: Any,
    mode: str = "append",
    keep_rows: bool = False,
    **changes: Any,
) -> dict[str, Any]:
    """One contender's run; with ``keep_rows`` its output rows ride along under ``"_rows"``."""
    work = root / "runs" / f"{job}-{name}"
    shutil.rmtree(work, ignore_errors=True)
    spec = job_spec(job, data, work, **changes)
    for k, v in spec_confs(spec).items():
        spark.conf.set(k, v)
    try:
        result = run_query(spark, build(spark, spec), work, mode)
        if keep_rows:
            result["_rows"] = _table_rows(spark, str(work / "out"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"    {job:<12} {name:<16} {result['events_per_s']:>9,} ev/s  {result['seconds']:>7.1f} s  rows out {result['rows_out']:,}",
        flush=True,
    )
    return result


def _rounds(
    spark: Any,
    root: Path,
    job: str,
    data: Path,
    contenders: list[tuple[str, str, Any, str, dict[str, Any]]],
    rounds: int,
    compare: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """Every contender ``rounds`` times, interleaved (the order rotates each round, so a burst of
    load on this shared machine does not land on one contender); each keeps its median round.
    ``compare`` names two contenders whose output tables must be equal row for row."""
    runs: dict[str, list[dict[str, Any]]] = {slot: [] for slot, *_ in contenders}
    tables: dict[str, list[tuple]] = {}
    for r in range(rounds):
        order = contenders[r % len(contenders) :] + contenders[: r % len(contenders)]
        for slot, name, build, mode, changes in order:
            keep = r == 0 and compare is not None and slot in compare
            res = _contend(spark, root, job, data, name, build, mode, keep_rows=keep, **changes)
            if keep:
                tables[slot] = res.pop("_rows")
            runs[slot].append(res)
    row: dict[str, Any] = {}
    for slot, results in runs.items():
        best = sorted(results, key=lambda x: x["events_per_s"])[(len(results) - 1) // 2]
        row[slot] = {**best, "rounds_events_per_s": [x["events_per_s"] for x in results]}
    if compare is not None:
        a, b = (tables.get(c, []) for c in compare)
        row["same_table_as_builtin"] = a == b and len(a) > 0
    return row


# -- 1. throughput against the built-in aggregations --------------------------------------------
def throughput(
    spark: Any,
    root: Path,
    events: int,
    key_sweep: list[int],
    warm_up: bool = True,
    fraud: bool = True,
    rounds: int = 1,
) -> list[dict[str, Any]]:
    out = []
    sessions: list[tuple[str, str, Any, str, dict[str, Any]]] = [
        ("batched", "batched", sessions_job, "append", {"executor": "batched"}),
        ("builtin", "session_window", session_window, "append", {}),
        ("count", "count", count_floor, "complete", {}),
    ]
    if warm_up:  # the first query of a session pays for JIT and Python worker start: not measured
        print("  warm-up (not measured)", flush=True)
        data = dataset(root, "clickstream", 20_000, 2_000)
        for _, name, build, mode, changes in sessions:
            _contend(spark, root, "sessions", data, f"warm-{name}", build, mode, **changes)
    for keys in key_sweep:
        data = dataset(root, "clickstream", events, keys)
        print(f"  sessions, {events:,} events, {keys:,} users, {rounds} round(s)", flush=True)
        row = _rounds(spark, root, "sessions", data, sessions, rounds, ("batched", "builtin"))
        out.append(
            _ratios({"job": "sessions", "events": events, "keys": keys, **row}, "session_window")
        )
        print(f"    same table as session_window: {row['same_table_as_builtin']}", flush=True)
    if not fraud:
        return out
    keys = key_sweep[-1]
    data = dataset(root, "auth", events, keys)
    print(f"  fraud_alerts, {events:,} events, {keys:,} users, {rounds} round(s)", flush=True)
    fraud_contenders = [
        ("batched", "batched", fraud_job, "append", {"executor": "batched"}),
        ("builtin", "failure_windows", failure_windows, "append", {}),
        ("count", "count", count_floor, "complete", {}),
    ]
    row = _rounds(spark, root, "fraud_alerts", data, fraud_contenders, rounds)
    out.append(
        _ratios({"job": "fraud_alerts", "events": events, "keys": keys, **row}, "window count")
    )
    return out


def _ratios(row: dict[str, Any], builtin_name: str) -> dict[str, Any]:
    b = row["batched"]["events_per_s"]
    row["builtin_name"] = builtin_name
    row["ratio_vs_builtin"] = round(b / max(1, row["builtin"]["events_per_s"]), 2)
    row["ratio_vs_count"] = round(b / max(1, row["count"]["events_per_s"]), 2)
    return row


# -- 2. per-key against batched on identical input ----------------------------------------------
def executors(
    spark: Any,
    root: Path,
    events: int,
    keys: int,
    jobs: tuple[str, ...] = ("sessions", "fraud_alerts"),
) -> list[dict[str, Any]]:
    out = []
    for job in jobs:
        data = dataset(root, KIND[job], events, keys)
        print(f"  {job}, {events:,} events, {keys:,} users: per-key vs batched", flush=True)
        build = sessions_job if job == "sessions" else fraud_job
        res: dict[str, Any] = {"job": job, "events": events, "keys": keys}
        tables = {}
        for executor in ("per-key", "batched"):
            work = root / "runs" / f"{job}-exec-{executor}"
            shutil.rmtree(work, ignore_errors=True)
            spec = job_spec(job, data, work, executor=executor)
            for k, v in spec_confs(spec).items():
                spark.conf.set(k, v)
            res[executor] = run_query(spark, build(spark, spec), work)
            tables[executor] = _table_rows(spark, str(work / "out"))
            shutil.rmtree(work, ignore_errors=True)
            print(
                f"    {executor:<8} {res[executor]['events_per_s']:>9,} ev/s  {res[executor]['seconds']:>7.1f} s  rows out {len(tables[executor]):,}",
                flush=True,
            )
        res["ratio"] = round(
            res["batched"]["events_per_s"] / max(1, res["per-key"]["events_per_s"]), 2
        )
        res["identical"] = tables["per-key"] == tables["batched"] and len(tables["batched"]) > 0
        print(
            f"    ratio batched/per-key {res['ratio']:.1f}x, identical outputs: {res['identical']}",
            flush=True,
        )
        out.append(res)
    return out


# -- 3. an available-now catch-up through the real runner ----------------------------------------
def bucket_keys(spark: Any, checkpoint: str, batch: int | None = None) -> int:
    from spark_jobs.state.buckets import bucket_key_count

    reader = spark.read.format("statestore")
    if batch is not None:
        reader = reader.option("batchId", batch)
    return sum(
        bucket_key_count(r["value"]) for r in reader.load(checkpoint).select("value").collect()
    )


def catch_up(
    spark: Any,
    root: Path,
    events: int,
    keys: int,
    calls: int,
    files_per_batch: int,
    n_probes: int = 5,
) -> dict[str, Any]:
    from spark_jobs.jobs.runner import run_job
    from spark_jobs.runtime.progress import read_progress

    data = dataset(root, "clickstream", events, keys, calls=calls)
    work = root / "runs" / "catch-up"
    shutil.rmtree(work, ignore_errors=True)
    spec = job_spec(
        "sessions",
        data,
        work,
        executor="batched",
        max_files_per_trigger=files_per_batch,
        min_batches_to_retain=1000,
    )
    print(
        f"  sessions catch-up: {events:,} events, {keys:,} users, {files_per_batch} file(s) per batch",
        flush=True,
    )
    with PeakRss() as peak:
        summary = run_job(spec, spark=spark)
    batches = [r for r in read_progress(spec.checkpoint) if r.get("name") == "sessions"]
    ids = [int(r["batchId"]) for r in batches]
    probes = (
        sorted({ids[int(i * (len(ids) - 1) / (n_probes - 1))] for i in range(n_probes)})
        if ids
        else []
    )
    series = {b: bucket_keys(spark, spec.checkpoint, b) for b in probes}
    keys_now = series[probes[-1]] if probes else 0
    half = len(probes) // 2
    bounded = bool(probes) and max(series[b] for b in probes[half:]) <= 1.25 * max(
        series[b] for b in probes[: half + 1]
    )
    res = {
        "events": events,
        "keys": keys,
        "seconds": summary.seconds,
        "batches": summary.batches,
        "input_rows": summary.input_rows,
        "events_per_s": round(summary.input_rows / max(summary.seconds, 1e-9)),
        "rows_written": summary.rows_written,
        "state_rows_buckets": summary.state_rows,
        "state_keys_end": keys_now,
        "state_keys_by_batch": series,
        "state_bounded": bounded,
        "state_memory_bytes_max": max(
            (
                sum(int(o.get("memoryUsedBytes") or 0) for o in r.get("stateOperators") or [])
                for r in batches
            ),
            default=0,
        ),
        "peak_rss": peak.result,
    }
    shutil.rmtree(work, ignore_errors=True)
    mib = 1024 * 1024
    print(
        f"    wall {res['seconds']:.1f} s, {res['events_per_s']:,} ev/s, {res['batches']} batches, sessions written {res['rows_written']:,}\n"
        f"    peak RSS: driver JVM {peak.result['jvm'] / mib:,.0f} MiB + Python workers {peak.result['python_workers'] / mib:,.0f} MiB = {peak.result['total'] / mib:,.0f} MiB\n"
        f"    state at the end: {keys_now:,} users in {summary.state_rows} buckets; users by batch {series}; bounded: {bounded}",
        flush=True,
    )
    return res


# -- 4. state store and checkpoint cost ----------------------------------------------------------
