"""``python -m spark_jobs publish JOB --staged URI --key KEY``: make a staged backfill visible.

The staged table (written by a backfill run on an isolated checkpoint) goes into the job's live
table in one Delta commit. What each mode means (the policy, ``MODES``, ``SCOPE`` and ``REFUSED``,
is the contract's, :mod:`spark_jobs.contract.backfill`, which the backfill plan reads too):

- ``append``: the backfill's events are events the live runs never processed (a lost or late
  folder). Rows whose key is new are inserted; rows whose key is live are combined where the
  job's rows can be combined (totals and counts add up, an unmatched order takes its payment),
  else the live row stays.
- ``replace``: the backfill's folder holds *all* events of what it covers: the live rows of the
  covered entities (``SCOPE``: users, services, event types) in the staged time range are
  replaced by the staged rows; other entities' rows are not touched.
- A mode that cannot be correct for a job is refused with the reason (``REFUSED``), in the
  backfill's plan step already.

Publishing holds the live job's lock (its checkpoint's, the one bound to the live table), so it
never interleaves with a run, a restore or a rollback of that job. ``append`` is refused when
the backfill read a file the live job's file source has logged (``sources/*/`` in both
checkpoints): those rows are in the live table already, and append would count them twice.

Publishing is idempotent, and stays so after Delta's log retention removed old commit files:

- the commit carries Delta's ``txnAppId``/``txnVersion`` (``statekeeper-backfill-KEY``, 0); Delta
  keeps these in every checkpoint, so a retried publish after a crash is skipped by Delta itself;
- a ledger file ``<live>/_statekeeper/backfills/KEY.json``, written after the commit, says "already
  published" without Spark (``VACUUM`` skips folders starting with ``_``). Between the commit and
  the ledger file, the commit's ``userMetadata`` marker (``statekeeper-backfill:KEY``) says it.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from spark_jobs import eventlog
from spark_jobs.contract import delta as delta_log  # not delta-spark's ``delta``
from spark_jobs.contract import paths
from spark_jobs.contract.backfill import (
    MARKER,
    MODES,
    SCOPE,
    marked_version,
    published,
    refusal,
)
from spark_jobs.contract.errors import ExitCode, UserError
from spark_jobs.jobs import definition

COMMIT_METADATA = "spark.databricks.delta.commitInfo.userMetadata"

# append: when a staged row whose key is live replaces it (else the live row stays). A left-outer
# order emitted unmatched by the live runs takes the payment the backfill found for it.
APPEND_REPLACES_WHEN: dict[str, str] = {"order_payments": "NOT t.matched AND s.matched"}


def _write_ledger(table: str, entry: dict[str, Any]) -> None:
    import fsspec

    target = paths.backfill_ledger(table, entry["key"])
    fs, p = fsspec.core.url_to_fs(target)
    fs.makedirs(p.rsplit("/", 1)[0], exist_ok=True)
    tmp = f"{p}.tmp"
    with fs.open(tmp, "w") as fh:
        json.dump(entry, fh, sort_keys=True)
    fs.mv(tmp, p)  # a reader sees the whole entry or none


def publish(
    job: str,
    staged: str,
    output: str | None,
    mode: str,
    key: str,
    staged_checkpoint: str | None = None,
    checkpoint: str | None = None,
) -> dict[str, Any]:
    """Publish ``staged`` into the live table (``output``, default the spec's) under the lock
    of the live checkpoint (``checkpoint``, default the spec's), which must be the one bound to
    that table. ``append`` needs the backfill's checkpoint, to check its files were never read
    by the live job."""
    from spark_jobs.contract.spec import load_spec

    spec = load_spec(job).with_overrides(output=output, checkpoint=checkpoint)
    reason = refusal(job, mode)
    if reason:
        raise UserError(f"cannot publish {job} with mode {mode}: {reason}")
    done = published(spec.output, key)
    if done is not None:
        _recomplete(spec, staged, key)
        return _skipped(job, spec.output, key, done)
    if not delta_log.exists(staged):
        raise UserError(
            f"staged table {staged} is not a Delta table; run the backfill's job step first"
        )
    from spark_jobs.contract.confine import checkpoint_path

    live_ck = checkpoint_path(spec.checkpoint)
    staged_ck = checkpoint_path(staged_checkpoint) if staged_checkpoint else None
    if mode == "append" and staged_ck is None:
        raise UserError(
            f"cannot publish {job} with mode append without --staged-checkpoint (the backfill's "
            "checkpoint): its files are checked against the live job's, so no row is added twice"
        )
    _check_live_checkpoint(live_ck, spec.output)
    from spark_jobs.contract.lock import JobLock

    # No live checkpoint yet: no run, restore or rollback of it to keep out (and no folder made).
    lock = JobLock(live_ck, job=job, purpose="publish") if Path(live_ck).exists() else None
    if lock is not None:
        lock.acquire()
    try:
        if mode == "append" and staged_ck is not None:
            _check_files_unread(staged_ck, live_ck, job, key)
        from spark_jobs.runtime.session import build_session

        spark = build_session(f"statekeeper-publish-{job}", spec=spec)
        result = publish_rows(spark, job, staged, spec.output, mode, key)
        _recomplete(spec, staged, key)
        return result
    finally:
        if lock is not None:
            lock.release()


def _check_live_checkpoint(live_ck: str, live: str) -> None:
    """Refuse a live checkpoint bound to another table: its lock and source log say nothing
    about ``live``."""
    from spark_jobs.contract.binding import bound_tables, same_table

    bound = bound_tables(live_ck)
    if bound is not None and not same_table(bound["output"], live):
        raise UserError(
            f"cannot publish into {live}: checkpoint {live_ck} writes {bound['output']}, not "
            "it; name the checkpoint of the job writing it with --checkpoint"
        )


def _check_files_unread(staged_ck: str, live_ck: str, job: str, key: str) -> None:
    """Refuse an append whose backfill read files the live job has read already
    (:func:`spark_jobs.checkpoints.source_files.read_before`)."""
    from spark_jobs.checkpoints.source_files import files_read, kind_of, read_before
    from spark_jobs.contract.binding import bound_inputs

    staged_inputs = bound_inputs(staged_ck)
    staged = {f: kind_of(f, staged_inputs) for f in files_read(staged_ck)}
    both = read_before(live_ck, bound_inputs(live_ck), staged)
    if both:
        shown = ", ".join(Path(f).name for f in both[:3]) + (" ..." if len(both) > 3 else "")
        raise UserError(
            f"cannot publish backfill {key} of {job} with mode append: {len(both)} of its files "
            f"were already read by the live job (checkpoint {live_ck}), there or as copies of "
            f"what it read: {shown}; their rows are in the live table, append would count them "
            "twice; backfill only files the live runs never read, or use mode replace",
            exit_code=ExitCode.UNSAFE,
        )


def _recomplete(spec: Any, staged: str, key: str) -> None:
    """The live table's complete partitions this publish changed, for their re-completion
    events (docs/completeness.md); a publish into another table announces nothing."""
    from spark_jobs.completeness import record_publish
    from spark_jobs.contract.spec import load_spec

    if spec.output == load_spec(spec.name).output and delta_log.exists(staged):
        version = marked_version(spec.output, key)
        record_publish(spec, staged, key, version, definition(spec.name).time_column)


def _skipped(job: str, live: str, key: str, done: dict[str, Any]) -> dict[str, Any]:
    reason = f"key {key} already in version {done.get('version')}"
    return {"job": job, "published": False, "reason": reason, "table": live}


def publish_rows(
    spark: Any, job: str, staged: str, live: str, mode: str, key: str
) -> dict[str, Any]:
    """Publish the staged table into ``live`` with ``spark``: one Delta commit, then the ledger."""
    from spark_jobs.io.sinks import TXN_APP_ID, TXN_VERSION

    reason = refusal(job, mode)
    if reason:
        raise UserError(f"cannot publish {job} with mode {mode}: {reason}")
    done = published(live, key)
    if done is not None:
        return _skipped(job, live, key, done)
    rows = spark.read.format("delta").load(staged)
    count = rows.count()
    if count == 0:
        return {"job": job, "published": False, "reason": "staged table is empty", "table": live}
    app_id = f"statekeeper-backfill-{key}"
    tags = {COMMIT_METADATA: f"{MARKER}{key} mode={mode} rows={count}"}
    try:
        if not delta_log.exists(live):
            (
                rows.write.format("delta")
                .mode("append")
                .option("txnAppId", app_id)
                .option("txnVersion", 0)
                .option("userMetadata", tags[COMMIT_METADATA])
                .save(live)
            )
            how = "created"
        else:
            for k, v in {**tags, TXN_APP_ID: app_id, TXN_VERSION: "0"}.items():
                spark.conf.set(k, v)
            how = (_replace if mode == "replace" else _append)(spark, job, rows, live)
    finally:
        for k in (*tags, TXN_APP_ID, TXN_VERSION):
            spark.conf.unset(k)
    entry = {
        "key": key,
        "job": job,
        "mode": mode,
        "rows": count,
        "how": how,
        "version": marked_version(live, key),
        "published_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    _write_ledger(live, entry)
    return {"job": job, "published": True, "how": how, "rows": count, "table": live, "key": key}


def _on_keys(job: str) -> str:
    return " AND ".join(f"t.`{k}` <=> s.`{k}`" for k in definition(job).keys)


def _append(spark: Any, job: str, rows: Any, live: str) -> str:
    from delta.tables import DeltaTable

    merge = DeltaTable.forPath(spark, live).alias("t").merge(rows.alias("s"), _on_keys(job))
    combined = definition(job).combined()
    if combined:
        merge = merge.whenMatchedUpdate(set={**combined})  # delta-spark's dict type is invariant
        how = "merged, live rows of known keys combined"
    elif job in APPEND_REPLACES_WHEN:
        merge = merge.whenMatchedUpdateAll(condition=APPEND_REPLACES_WHEN[job])
        how = f"merged, live rows replaced when {APPEND_REPLACES_WHEN[job]}"
    else:
        how = "merged, new keys only"
    merge.whenNotMatchedInsertAll().execute()
    return how


def _replace(spark: Any, job: str, rows: Any, live: str) -> str:
    """One MERGE: staged rows upserted, and the covered entities' live rows in the staged time
    range that the backfill did not produce deleted (they come in as ``_sk_gone`` source rows)."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    declared = definition(job)
    keys, scope, col = list(declared.keys), SCOPE[job], declared.time_column
    lo, hi = rows.agg(F.min(col), F.max(col)).first()
    gone = (
        spark.read.format("delta")
        .load(live)
        .where(F.col(col).between(lo, hi))
        .join(rows.select(scope).distinct(), scope, "left_semi")
        .join(rows.select(*keys), keys, "left_anti")
    )
    source = rows.withColumn("_sk_gone", F.lit(False)).unionByName(
        gone.withColumn("_sk_gone", F.lit(True))
    )
    values: dict[str, Any] = {c: f"s.`{c}`" for c in rows.columns}
    (
        DeltaTable.forPath(spark, live)
        .alias("t")
        .merge(source.alias("s"), _on_keys(job))
        .whenMatchedDelete(condition="s._sk_gone")
        .whenMatchedUpdate(set=values)
        .whenNotMatchedInsert(condition="NOT s._sk_gone", values=values)
        .execute()
    )
    return f"replaced {scope} covered, {col} in [{lo.isoformat()}, {hi.isoformat()}]"


def cmd_publish(args: argparse.Namespace) -> int:
    from spark_jobs.contract.confine import given_path
    from spark_jobs.contract.spec import load_spec

    if args.output:  # the live table written: the rule the DAG guard applies to its param
        given_path("output", args.output, own=(load_spec(args.job).output,))
    # The staged table is read into the live one: a table under a tables root (a backfill's
    # staging folder, <data>/backfill, is one), never any folder a caller names.
    staged = given_path("output", args.staged, "--staged")
    result = publish(
        args.job,
        staged,
        args.output,
        args.mode,
        args.key,
        staged_checkpoint=args.staged_checkpoint,
        checkpoint=args.checkpoint,
    )
    print(json.dumps(result))
    eventlog.operation("publish", args, result, dry_run=not result.get("published"))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    sp = subparsers.add_parser(
        "publish", help="make a staged backfill table visible in the job's table (idempotent)"
    )
    sp.add_argument("job")
    sp.add_argument("--staged", required=True, metavar="URI", help="the staged Delta table")
    sp.add_argument("--output", metavar="URI", help="the live table (default: the spec's output)")
    sp.add_argument(
        "--checkpoint",
        metavar="URI",
        help="the live job's checkpoint, bound to the live table (default: the spec's); "
        "publishing holds its lock",
    )
    sp.add_argument(
        "--staged-checkpoint",
        metavar="URI",
        help="the backfill's checkpoint (needed for append: its files must be ones the live "
        "job never read)",
    )
    sp.add_argument("--mode", choices=MODES, default="append")
    sp.add_argument(
        "--key", required=True, help="the backfill's key; a key already published is a no-op"
    )
    sp.set_defaults(func=cmd_publish)
