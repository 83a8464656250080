"""A quality suite's time vs one hand-written Spark aggregate computing the same facts.

Same table, same run, same session: a ``sessions`` Delta table of N rows is validated in full by
``run_quality`` (Great Expectations 1.x: 23 expectations, Data Docs, results table), and by a
single ``df.agg(...)`` computing the same facts (row count, null keys, duplicate keys, range
violations, newest time; the schema from the DataFrame's schema). Prints both and the ratio.

Then what users run after a catch-up: ``python -m spark_jobs quality sessions`` as a fresh
process, validating the one Delta version (``--increment`` rows, 100,000 by default) written since
the last validated one. Its whole wall time is the figure issue 13 targets (<= 5 s); below the
spec's ``quality.pandas_max_rows`` it starts no JVM.

    python -m bench.bench_quality [--rows 200000] [--repeat 2] [--increment 100000] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def make_sessions(spark: Any, uri: str, rows: int, first: int = 0) -> None:
    """``rows`` sessions (ids from ``first``) appended to the Delta table ``uri``: one version."""
    from pyspark.sql import functions as F

    from spark_jobs.jobs.sessions import SCHEMA

    start = F.timestamp_seconds(F.lit(1772359200) + F.col("id") * 7)
    df = spark.range(first, first + rows).select(
        F.concat(F.lit("u"), (F.col("id") % 5000).cast("string")).alias("user_id"),
        F.sha2(F.col("id").cast("string"), 256).alias("session_id"),
        start.alias("session_start"),
        (start + F.expr("INTERVAL 25 MINUTES")).alias("session_end"),
        (F.col("id") % 20 + 1).alias("events"),
        (F.col("id") % 10).alias("page_views"),
        (F.col("id") % 900).alias("total_duration_sec"),
        F.array(F.lit("/a"), F.lit("/b")).alias("last_pages"),
        (F.col("id") % 9 == 0).alias("purchased"),
        (F.col("id") % 4 == 0).alias("checkout_viewed"),
    )
    df = spark.createDataFrame(df.rdd, schema=SCHEMA)
    df.write.format("delta").mode("append").save(uri)


def hand_written(spark: Any, uri: str) -> dict[str, Any]:
    """The suite's facts in one aggregate (one scan, one shuffle for the distinct count)."""
    from pyspark.sql import functions as F

    from spark_jobs.quality.suites import column_types

    df = spark.read.format("delta").load(uri)
    n = F.count(F.lit(1))

    def bad(cond: str) -> Any:
        return F.sum(F.when(F.expr(cond), 1).otherwise(0))

    row = df.agg(
        n.alias("rows"),
        bad("session_id IS NULL").alias("null_keys"),
        (n - F.count_distinct("session_id")).alias("duplicate_keys"),
        bad("user_id IS NULL").alias("null_users"),
        bad("session_end < session_start").alias("end_before_start"),
        bad("page_views > events").alias("views_over_events"),
        bad("events < 1").alias("events_below_1"),
        bad("page_views < 0").alias("negative_views"),
        bad("total_duration_sec < 0").alias("negative_duration"),
        F.max("session_end").alias("newest"),
    ).collect()[0]
    facts = row.asDict()
    expected = column_types("sessions")
    facts["schema_ok"] = [f.name for f in df.schema] == list(expected) and all(
        type(f.dataType).__name__ == expected[f.name] for f in df.schema
    )
    return facts


def increment_process(spark: Any, tmp: Path, rows: int, rounds: int) -> dict[str, Any]:
    """Whole ``python -m spark_jobs quality sessions`` processes, each on a table whose newest
    version (``rows`` rows) is the only one not validated yet; ``rounds`` of them, median kept."""
    import statistics

    from bench.bench_e2e import _process

    uri, ckpt = tmp / "increments", tmp / "increments-ck"
    args = [
        "-m",
        "spark_jobs",
        "quality",
        "sessions",
        "--table",
        str(uri),
        "--checkpoint",
        str(ckpt),
        "--json",
    ]
    make_sessions(spark, str(uri), rows)
    _process(args, tmp)  # the first run validates version 0
    walls, result, batch = [], {}, {}
    for r in range(1, rounds + 1):
        make_sessions(spark, str(uri), rows, first=r * rows)
        wall, stdout = _process(args, tmp)
        walls.append(round(wall, 2))
        result = json.loads(stdout)
        (batch,) = [b for b in result["batches"] if b["uri"] == str(uri)]
        assert batch["rows"] == rows, batch  # the new version only
    out = {
        "rows": rows,
        "engine": result.get("engine"),
        "status": result["status"],
        "process_seconds": walls,
        "median_seconds": statistics.median(walls),
    }
    print(
        f"quality on a new version of {rows:,} rows, whole process ({out['engine']} engine): "
        f"{walls} s, median {out['median_seconds']:.2f} s (target <= 5 s)"
    )
    return out


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m bench.bench_quality", description=__doc__)
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--repeat", type=int, default=2, help="timed rounds (best kept)")
    p.add_argument("--increment", type=int, default=100_000, help="rows of the new version")
    p.add_argument("--smoke", action="store_true", help="tiny and fast (20,000 rows, one round)")
    args = p.parse_args(argv)
    if args.smoke:
        args.rows, args.repeat, args.increment = 20_000, 1, 20_000

    from spark_jobs.contract.spec import load_spec
    from spark_jobs.quality.runner import run_quality
    from spark_jobs.runtime.session import build_session

    spark = build_session("statekeeper-bench-quality")
    tmp = Path(tempfile.mkdtemp(prefix="statekeeper-bench-quality-"))
    try:
        uri = str(tmp / "sessions")
        make_sessions(spark, uri, args.rows)
        spec = load_spec("sessions").with_overrides(output=uri, checkpoint=str(tmp / "ck"))
        run_quality(spec, full=True, spark=spark)  # warm-up: GX import, context, first plans
        hand_written(spark, uri)
        suite_s, agg_s, result, facts = [], [], None, {}
        for _ in range(args.repeat):
            t = time.perf_counter()
            result = run_quality(spec, full=True, spark=spark)
            suite_s.append(time.perf_counter() - t)
            t = time.perf_counter()
            facts = hand_written(spark, uri)
            agg_s.append(time.perf_counter() - t)
        assert result is not None
        checks = len(result.rows)
        unexpected = {r.check: r.unexpected_count for r in result.rows if r.unexpected_count}
        out = {
            "rows": args.rows,
            "checks": checks,
            "suite_seconds": round(min(suite_s), 2),
            "aggregate_seconds": round(min(agg_s), 2),
            "ratio": round(min(suite_s) / max(min(agg_s), 1e-9), 1),
            "suite_status": result.status,
            "same_facts": facts["duplicate_keys"] == 0 and facts["schema_ok"] and not unexpected,
        }
        print(
            f"quality suite (GX, {checks} checks, full table of {args.rows} rows): "
            f"{out['suite_seconds']:.2f}s; hand-written single aggregate: "
            f"{out['aggregate_seconds']:.2f}s; ratio {out['ratio']:.1f}x"
        )
        out["increment"] = increment_process(
            spark, tmp, args.increment, 3 if args.repeat > 1 else 1
        )
        print(json.dumps(out))
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
