"""A quality suite's time vs one hand-written Spark aggregate computing the same facts.

Same table, same run, same session: a ``sessions`` Delta table of N rows is validated in full by
``run_quality`` (Great Expectations 1.x: 23 expectations, Data Docs, results table), and by a
single ``df.agg(...)`` computing the same facts (row count, null keys, duplicate keys, range
violations, newest time; the schema from the DataFrame's schema). Prints both and the ratio.

    python -m bench.bench_quality [--rows 200000] [--repeat 2] [--smoke]
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


def make_sessions(spark: Any, uri: str, rows: int) -> None:
    from pyspark.sql import functions as F

    from spark_jobs.jobs.sessions import SCHEMA

    start = F.timestamp_seconds(F.lit(1772359200) + F.col("id") * 7)
    df = spark.range(rows).select(
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
    df.write.format("delta").mode("overwrite").save(uri)


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


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m bench.bench_quality", description=__doc__)
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--repeat", type=int, default=2, help="timed rounds (best kept)")
    p.add_argument("--smoke", action="store_true", help="tiny and fast (20,000 rows, one round)")
    args = p.parse_args(argv)
    if args.smoke:
        args.rows, args.repeat = 20_000, 1

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
        print(json.dumps(out))
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
