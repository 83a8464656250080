"""``python -m spark_jobs publish JOB --staged URI --key KEY``: make a staged backfill visible.

The staged table (written by a backfill run on an isolated checkpoint) goes into the job's live
table in one Delta commit whose ``userMetadata`` is ``statekeeper-backfill:KEY``; a key already
in the live table's history is a no-op, so publishing the same backfill twice changes nothing.

- ``replace``: the staged rows replace the live rows in the staged time range (``replaceWhere``
  on the table's time column); for update-mode tables (one row per key) it is an upsert.
- ``append``: only staged rows whose key is not in the live table are inserted.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from spark_jobs.errors import UserError

MARKER = "statekeeper-backfill:"
COMMIT_METADATA = "spark.databricks.delta.commitInfo.userMetadata"


def published_version(table: str, key: str) -> int | None:
    """The version whose commit carries ``key``'s marker (read from ``_delta_log``), else None."""
    log = Path(table.removeprefix("file://")) / "_delta_log"
    if "://" in table and not table.startswith("file://"):
        return None  # remote tables: the Spark-side history check below decides
    if not log.is_dir():
        return None
    for p in sorted(log.glob("*.json")):
        for line in p.read_text().splitlines():
            if '"commitInfo"' in line:
                meta = json.loads(line)["commitInfo"].get("userMetadata") or ""
                if meta.startswith(MARKER + key):
                    return int(p.stem)
    return None


def publish(job: str, staged: str, output: str | None, mode: str, key: str) -> dict:
    from spark_jobs.io import tables
    from spark_jobs.io.sinks import is_delta_table
    from spark_jobs.runtime.spec import load_spec

    spec = load_spec(job).with_overrides(output=output)
    live = spec.output
    done = published_version(live, key)
    if done is not None:
        return {
            "job": job,
            "published": False,
            "reason": f"key {key} already in version {done}",
            "table": live,
        }
    if not is_delta_table(staged):
        raise UserError(
            f"staged table {staged} is not a Delta table; run the backfill's job step first"
        )
    from spark_jobs.runtime.session import build_session

    spark = build_session(f"statekeeper-publish-{job}", spec=spec)
    rows = spark.read.format("delta").load(staged)
    count = rows.count()
    if count == 0:
        return {"job": job, "published": False, "reason": "staged table is empty", "table": live}
    marker = f"{MARKER}{key} mode={mode} rows={count}"
    spark.conf.set(COMMIT_METADATA, marker)
    try:
        if not is_delta_table(live):
            rows.write.format("delta").mode("append").save(live)
            how = "created"
        elif mode == "append" or spec.output_mode == "update":
            from delta.tables import DeltaTable

            keys = tables.KEYS[job]
            cond = " AND ".join(f"t.`{k}` <=> s.`{k}`" for k in keys)
            merge = DeltaTable.forPath(spark, live).alias("t").merge(rows.alias("s"), cond)
            if mode == "replace":
                merge = merge.whenMatchedUpdateAll()
            merge.whenNotMatchedInsertAll().execute()
            how = "merged" if mode == "append" else "upserted"
        else:
            from pyspark.sql import functions as F

            col = tables.TIME_COLUMN[job]
            lo, hi = rows.agg(F.min(col), F.max(col)).first()
            where = f"`{col}` >= '{lo.isoformat()}' AND `{col}` <= '{hi.isoformat()}'"
            rows.write.format("delta").mode("overwrite").option("replaceWhere", where).save(live)
            how = f"replaced {where}"
    finally:
        spark.conf.unset(COMMIT_METADATA)
    return {"job": job, "published": True, "how": how, "rows": count, "table": live, "key": key}


def cmd_publish(args: argparse.Namespace) -> int:
    print(json.dumps(publish(args.job, args.staged, args.output, args.mode, args.key)))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    sp = subparsers.add_parser(
        "publish", help="make a staged backfill table visible in the job's table (idempotent)"
    )
    sp.add_argument("job")
    sp.add_argument("--staged", required=True, metavar="URI", help="the staged Delta table")
    sp.add_argument("--output", metavar="URI", help="the live table (default: the spec's output)")
    sp.add_argument("--mode", choices=("replace", "append"), default="append")
    sp.add_argument(
        "--key", required=True, help="the backfill's key; a key already published is a no-op"
    )
    sp.set_defaults(func=cmd_publish)
