"""Delta sinks, exactly once across crashes and re-runs.

- append: Delta's streaming sink, which records (query id, batch id) in the table's log and skips
  a batch it has already committed when a restarted query replays it.
- upsert: ``foreachBatch`` MERGE on the table's key, made idempotent with Delta's
  ``txnAppId``/``txnVersion`` (the query id from the checkpoint and the batch id).
"""

from __future__ import annotations

import json
from typing import Any

from spark_jobs.runtime import paths

TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
TXN_VERSION = "spark.databricks.delta.write.txnVersion"


def start_append(
    df: Any,
    output: str,
    checkpoint: str,
    name: str,
    trigger: dict[str, Any],
    output_mode: str = "append",
) -> Any:
    return (
        df.writeStream.format("delta")
        .queryName(name)
        .outputMode(output_mode)
        .option("checkpointLocation", checkpoint)
        .trigger(**trigger)
        .start(output)
    )


def _query_id(checkpoint: str) -> str:
    """The query id Spark keeps in ``<checkpoint>/metadata``: stable across restarts, new for a
    new checkpoint (so a fresh checkpoint's batch 0 is never mistaken for an old batch 0)."""
    import fsspec

    with fsspec.open(paths.join(checkpoint, "metadata"), "r") as fh:
        return str(json.loads(fh.readline())["id"])


def is_delta_table(uri: str) -> bool:
    import fsspec

    fs, p = fsspec.core.url_to_fs(paths.join(uri, "_delta_log"))
    return bool(fs.exists(p))


def make_upsert(
    output: str, checkpoint: str, keys: tuple[str, ...], update: dict[str, str] | None = None
):
    """A foreachBatch function merging each batch into ``output`` on ``keys``, once per batch.

    ``update`` (MERGE ``set`` expressions) combines a batch row with the live row of its key;
    without it the batch row replaces the live one."""
    cache: dict[str, str] = {}

    def upsert_batch(batch: Any, batch_id: int) -> None:
        from delta.tables import DeltaTable

        spark = batch.sparkSession
        app_id = cache.setdefault("app", f"statekeeper-{_query_id(checkpoint)}")
        if not is_delta_table(output):
            (batch.write.format("delta").mode("append")
             .option("txnAppId", app_id).option("txnVersion", batch_id).save(output))  # fmt: skip
            return
        cond = " AND ".join(f"t.{k} = s.{k}" for k in keys)
        spark.conf.set(TXN_APP_ID, app_id)
        spark.conf.set(TXN_VERSION, str(batch_id))
        try:
            merge = DeltaTable.forPath(spark, output).alias("t").merge(batch.alias("s"), cond)
            merge = merge.whenMatchedUpdate(set=update) if update else merge.whenMatchedUpdateAll()
            merge.whenNotMatchedInsertAll().execute()
        finally:
            spark.conf.unset(TXN_APP_ID)
            spark.conf.unset(TXN_VERSION)

    return upsert_batch


def start_upsert(
    df: Any,
    output: str,
    checkpoint: str,
    name: str,
    trigger: dict[str, Any],
    keys: tuple[str, ...],
    update: dict[str, str] | None = None,
) -> Any:
    return (
        df.writeStream.queryName(name)
        .outputMode("update")
        .option("checkpointLocation", checkpoint)
        .trigger(**trigger)
        .foreachBatch(make_upsert(output, checkpoint, keys, update))
        .start()
    )
