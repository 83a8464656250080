"""One streaming query per job, writing two Delta tables exactly once across crashes and re-runs.

The query's rows are the job's output rows unioned with the bad records (which carry a
``_quarantine`` struct). ``foreachBatch`` persists each batch, writes the output rows (append, or
MERGE on the table's key for upsert jobs) and the quarantine rows to their tables, then
unpersists. Each write carries Delta's ``txnAppId``/``txnVersion`` = (the checkpoint's query id,
batch id): a replayed batch (after a kill between the writes and Spark's commit) is skipped by the
table that already has it and written to the one that does not. The app id is the id Delta's own
streaming sink records, so a table written by the earlier Delta-sink design continues seamlessly.

Rows whose ``_keys`` column (issue 15's key-level metrics) is set are metric rows, not data: they
are summed and handed to the progress log, never written to a table.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from spark_jobs.contract import delta as delta_log  # not delta-spark's ``delta``
from spark_jobs.contract import paths
from spark_jobs.io import conflicts, delta_txns, key_metrics
from spark_jobs.runtime import progress

TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
TXN_VERSION = "spark.databricks.delta.write.txnVersion"
# An append spreads its rows over at most one file per core, each of at least this many rows: a
# small batch writes one file, a catch-up batch keeps both cores writing. Sized from the batch's
# count the writer already has, so the write needs no shuffle (Delta's optimized write, the
# tables' declared setting, shuffles the rows to bin them; it stays on for MERGE, whose files
# come from its join).
MIN_ROWS_PER_FILE = 50_000
QUARANTINE_COL = "_quarantine"
KEYS_COL = key_metrics.COLUMN


def combine(out: Any, bad: Any) -> Any:
    """The job's output stream and its bad records as one stream (bad rows: ``_quarantine``)."""
    from pyspark.sql import functions as F

    tagged = bad.select(F.struct(*bad.columns).alias(QUARANTINE_COL))
    return out.unionByName(tagged, allowMissingColumns=True)


def query_id(checkpoint: str) -> str:
    """The query id Spark keeps in ``<checkpoint>/metadata``: stable across restarts, new for a
    new checkpoint (so a fresh checkpoint's batch 0 is never mistaken for an old batch 0)."""
    import fsspec

    with fsspec.open(paths.join(checkpoint, "metadata"), "r") as fh:
        return str(json.loads(fh.readline())["id"])


def files_for(rows: int, cores: int) -> int:
    """How many files an append of ``rows`` rows writes (see :data:`MIN_ROWS_PER_FILE`)."""
    return max(1, min(cores, -(-rows // MIN_ROWS_PER_FILE)))


def _write(
    df: Any,
    uri: str,
    app_id: str,
    batch_id: int,
    keys: tuple[str, ...] | None,
    update: dict[str, str] | None = None,
    rows: int = 0,
) -> None:
    """:func:`_write_once`, again when it loses a commit race (``table maintain``'s compaction
    or property change committed first): the batch is cached and the txn keeps it exactly once.

    Then the table's next exactly-once check is rebuilt in the background
    (:mod:`~spark_jobs.io.delta_txns`), between batches rather than in the next write. Both
    tables: a quarantine write without it paid its check on the batch's path (a Spark job of
    0.9 to 1.4 s, running beside the output's write). Not at a batch's start: in a fresh process
    that slowed runs writing nothing. Nor after a write of no rows (a table created empty, the
    quarantine of clean data): the next batch is no likelier to write it, and the rebuild took
    a core beside that batch's own work (a Spark job of 0.8 s of task time in ``run sessions``)."""
    conflicts.retrying(lambda: _write_once(df, uri, app_id, batch_id, keys, update, rows))
    if rows:
        delta_txns.warm(df.sparkSession, uri)


def _write_once(
    df: Any,
    uri: str,
    app_id: str,
    batch_id: int,
    keys: tuple[str, ...] | None,
    update: dict[str, str] | None = None,
    rows: int = 0,
) -> None:
    """Append ``df`` (``rows`` rows) to ``uri`` (or MERGE it on ``keys``), at most once per
    (app_id, batch_id).

    ``update`` (MERGE ``set`` expressions) combines a batch row with the live row of its key;
    without it the batch row replaces the live one."""
    if keys is None or not delta_log.exists(uri):
        cores = df.sparkSession.sparkContext.defaultParallelism
        (
            df.coalesce(files_for(rows, cores))  # the cached batch's partitions, no shuffle
            .write.format("delta")
            .mode("append")
            .option("optimizeWrite", "false")
            .option("txnAppId", app_id)
            .option("txnVersion", batch_id)
            .save(uri)
        )
        return
    from delta.tables import DeltaTable

    spark = df.sparkSession
    cond = " AND ".join(f"t.{k} = s.{k}" for k in keys)
    # MERGE takes no writer options: Delta reads the same pair from these session confs.
    spark.conf.set(TXN_APP_ID, app_id)
    spark.conf.set(TXN_VERSION, str(batch_id))
    try:
        merge = DeltaTable.forPath(spark, uri).alias("t").merge(df.alias("s"), cond)
        # A new dict, typed as delta-spark's dict[str, str | Column] (dicts are invariant).
        merge = merge.whenMatchedUpdate(set={**update}) if update else merge.whenMatchedUpdateAll()
        merge.whenNotMatchedInsertAll().execute()
    finally:
        spark.conf.unset(TXN_APP_ID)
        spark.conf.unset(TXN_VERSION)


def side_by_side(spark: Any, writes: list[Callable[[], None]]) -> None:
    """Run ``writes`` at the same time and wait for all of them; the first failure is raised.

    A batch's two tables are independent commits, each exactly once by its own txn pair, so
    their order does not matter. Much of a small write is the driver's (Delta's log, the
    commit), which overlaps: a first batch's two writes (both tables created) took 3.3 to 4.5 s
    side by side against 3.5 to 5.2 s one after the other (three small runs each, interleaved).
    The threads carry the batch's local properties (``inheritable_thread_target``), as its own
    jobs do."""
    if len(writes) < 2:  # most batches: the output table alone, in the batch's own thread
        for write in writes:
            write()
        return
    from pyspark import inheritable_thread_target

    errors: list[BaseException] = []

    @inheritable_thread_target(spark)
    def run(write: Callable[[], None]) -> None:
        try:
            write()
        except BaseException as exc:  # noqa: BLE001 - handed to the batch's thread, raised there
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(w,), daemon=True) for w in writes[1:]]
    for t in threads:
        t.start()
    try:
        writes[0]()
    finally:
        for t in threads:
            t.join()
    if errors:
        raise errors[0]


def make_batch_writer(
    output: str,
    quarantine: str,
    checkpoint: str,
    name: str,
    data_columns: list[str],
    upsert_keys: tuple[str, ...] | None = None,
    upsert_update: dict[str, str] | None = None,
) -> Callable[[Any, int], None]:
    """The ``foreachBatch`` function splitting a combined batch into its two tables."""
    cache: dict[str, str] = {}
    # keys held after the last logged batch: a replayed batch was never logged, so it is added
    # to the total it was first added to
    held = {"total": progress.last_keys_total(checkpoint), "batch": -1, "base": 0}

    def write_batch(batch: Any, batch_id: int) -> None:
        from pyspark.sql import functions as F

        app_id = cache.get("app") or cache.setdefault("app", query_id(checkpoint))
        has_keys = KEYS_COL in batch.columns
        is_bad = F.col(QUARANTINE_COL).isNotNull()
        is_metric = F.col(KEYS_COL).isNotNull() if has_keys else F.lit(False)
        sums = (
            [F.sum(F.col(f"{KEYS_COL}.{k}")).alias(k) for k in key_metrics.FIELDS]
            if has_keys
            else []
        )
        output_exists = delta_log.exists(output)
        # removed under the running query (an earlier batch left it there): not begun anew
        if not output_exists and "had_output" in cache:
            raise RuntimeError(
                f"output table {output} was removed while job {name} ran; its next run says "
                "what to do (docs/checkpoints.md)"
            )
        # Computed once: the stateful operators run in the one pass that fills the cache.
        batch.persist()
        try:
            counts = batch.agg(
                F.count(F.when(~is_bad & ~is_metric, 1)).alias("_out"),
                F.count(F.when(is_bad, 1)).alias("_bad"),
                F.count(F.when(is_metric, 1)).alias("_metrics"),
                *sums,
            ).first()
            writes: list[Callable[[], None]] = []
            # Empty writes only to create a table, so both tables exist after a first run.
            if counts["_bad"] or not delta_log.exists(quarantine):
                bad = batch.where(is_bad).select(f"{QUARANTINE_COL}.*")
                writes.append(
                    lambda: _write(bad, quarantine, app_id, batch_id, None, rows=counts["_bad"])
                )
            if counts["_out"] or not output_exists:
                rows = batch.where(~is_bad & ~is_metric).select(*data_columns)

                writes.append(
                    lambda: _write(
                        rows, output, app_id, batch_id, upsert_keys, upsert_update, counts["_out"]
                    )
                )
            side_by_side(batch.sparkSession, writes)
            cache["had_output"] = output  # there now, whether it was or this batch made it
            if counts["_metrics"] or has_keys:
                if batch_id != held["batch"]:  # the same batch again starts where it started
                    held["batch"], held["base"] = batch_id, held["total"]
                keys = key_metrics.total(held["base"], [{k: counts[k] for k in key_metrics.FIELDS}])
                keys["emitted"] = int(counts["_out"])
                held["total"] = keys["total"]
                progress.put_keys(name, batch_id, keys)
        finally:
            batch.unpersist()

    return write_batch


def start(
    df: Any,
    checkpoint: str,
    name: str,
    trigger: dict[str, Any],
    writer: Callable[[Any, int], None],
    output_mode: str = "append",
) -> Any:
    return (
        df.writeStream.queryName(name)
        .outputMode(output_mode)
        .option("checkpointLocation", checkpoint)
        .trigger(**trigger)
        .foreachBatch(writer)
        .start()
    )
