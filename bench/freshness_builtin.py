"""``python -m bench.freshness_builtin INPUT OUTPUT CHECKPOINT TRIGGER [exactly-once]``: the continuous
``user_counts`` a user would write with Spark's built-ins, as a whole process, for
:mod:`bench.freshness`: Spark's JSON reader with the kind's schema (or the Kafka source and
``from_json`` for a ``kafka://HOST:PORT/TOPIC`` input), per-user counts (streaming aggregation,
update mode, the spec's RocksDB and shuffle partitions), ``foreachBatch`` MERGE into a Delta table
with the job's columns, a processing-time trigger. With ``exactly-once``, each MERGE carries
Delta's idempotent-write pair (``txnAppId`` = the query's id, ``txnVersion`` = the batch id, the
pattern Delta documents for ``foreachBatch``), so a batch replayed after a crash is not added
twice: the guarantee ``run`` gives, and the same Delta check it pays for. Runs until SIGTERM. Its batches' progress goes
to ``builtin-progress.jsonl`` beside the checkpoint (the bench's instrument)."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any

JOB = "user_counts"
BUILTIN_PROGRESS = "builtin-progress.jsonl"  # beside the built-in's checkpoint


TXN_APP_ID = "spark.databricks.delta.write.txnAppId"  # MERGE reads the pair from the session
TXN_VERSION = "spark.databricks.delta.write.txnVersion"


def main(inp: str, out: str, ckpt: str, trigger: str, mode: str = "plain") -> int:
    """The pipeline a user would write: read, count per user, MERGE each batch into Delta
    (``mode`` ``exactly-once``: idempotent per batch, as Delta documents it)."""
    if mode not in ("plain", "exactly-once"):
        raise SystemExit(f"mode must be plain or exactly-once, not {mode!r}")
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F
    from pyspark.sql.streaming import StreamingQueryListener

    from spark_jobs.contract.spec import load_spec
    from spark_jobs.io import event_kinds
    from spark_jobs.jobs.user_counts import SCHEMA
    from spark_jobs.runtime.session import build_session

    spec = load_spec(JOB)
    spark = build_session("builtin-user_counts", spec=spec)
    schema = event_kinds.spark_schema("clickstream")
    if inp.startswith("kafka://"):
        bootstrap, topic = inp[len("kafka://") :].split("/", 1)
        raw = (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .load()
        )
        events = raw.select(F.from_json(F.col("value").cast("string"), schema).alias("e"))
        events = events.select("e.*")
    else:
        events = spark.readStream.schema(schema).option("pathGlobFilter", "*.json*").json(inp)
    counts = (
        events.where(F.col("user_id").isNotNull())
        .groupBy("user_id")
        .agg(
            F.count(F.lit(1)).alias("total_events"),
            F.count(F.when(F.col("event_type") == "purchase", 1)).alias("purchases"),
            F.max("event_time").alias("last_event_time"),
        )
    )
    spark.createDataFrame([], SCHEMA).write.format("delta").mode("append").save(out)

    query: list[Any] = []  # the started query, for its id

    def upsert(batch: Any, batch_id: int) -> None:
        if mode == "exactly-once":
            spark.conf.set(TXN_APP_ID, str(query[0].id))
            spark.conf.set(TXN_VERSION, str(batch_id))
        table = DeltaTable.forPath(spark, out).alias("t")
        merge = table.merge(batch.alias("s"), "t.user_id = s.user_id")
        merge.whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()

    log = Path(ckpt).parent / BUILTIN_PROGRESS

    class Log(StreamingQueryListener):  # the bench's instrument, not the user's pipeline
        def onQueryStarted(self, event: Any) -> None:
            pass

        def onQueryProgress(self, event: Any) -> None:
            with open(log, "a") as fh:
                fh.write(event.progress.json.replace("\n", " ") + "\n")

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            pass

    spark.streams.addListener(Log())
    q = (
        counts.writeStream.outputMode("update")
        .option("checkpointLocation", ckpt)
        .trigger(processingTime=trigger.replace("s", " seconds"))
        .foreachBatch(upsert)
        .start()
    )
    query.append(q)
    signal.signal(signal.SIGTERM, lambda *_: q.stop())
    q.awaitTermination()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
