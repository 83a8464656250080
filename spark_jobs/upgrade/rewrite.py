"""The state rewrite behind ``upgrade migrate``: a stopped job's state, moved to a new state row
or state store without re-reading its input (Spark 4.2).

Spark has no public writer for state, so Spark writes it itself, in three steps:

1. **Rows.** The state data source (``format("statestore")``) reads every key's state at the
   last committed batch K as typed columns; the rule (:mod:`spark_jobs.upgrade.rules`) turns each
   old row into the new one (or drops the key). The result is written as Parquet *seed* rows: the
   key columns, the new state row, the key's timeout.
2. **Seed checkpoint.** A one-batch streaming query over the seed rows, grouped by the same key
   columns into ``applyInPandasWithState`` with the new state schema and the target store, puts
   each row into state (``GroupState.update``, same timeout). Spark writes that state and its
   schema files as it would for the job, in a scratch checkpoint.
3. **Placed at batch K+1.** The new checkpoint (a copy of the live one's logs, made by
   :mod:`spark_jobs.upgrade.staging`) gets the seed's state as the state after batch K+1, a batch
   that reads no input (as Spark's own offline repartition records one): on RocksDB through
   Spark's ``StateRewriter`` (what repartition runs; it reads the seed checkpoint and commits a
   snapshot), on the HDFS-backed store by copying the seed's one delta file per partition as the
   snapshot of that version (for a file of puts only the two formats are the same; Spark's
   rewriter reads RocksDB state only).

The job then continues from batch K+2 with the same source positions and sink batch ids.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spark_jobs.contract.errors import UserError
from spark_jobs.contract.spark_confs import STATE_STORE_PROVIDERS
from spark_jobs.upgrade.rules import Rule, struct_type

SEED_STATE, SEED_TIMEOUT, SEED_TIME = "_state", "_timeout", "_seed_time"
REWRITER = "org.apache.spark.sql.execution.streaming.state.StateRewriter"


@dataclass(frozen=True)
class Rewrite:
    live: Path  # the live checkpoint: read, never written
    staged: Path  # the new checkpoint (logs copied from live, batch K+1 added by staging)
    work: Path  # scratch: seed rows and seed checkpoint
    batch: int  # K, the live checkpoint's last committed batch
    state_ddl: str  # the new state row, as Spark DDL
    store: str  # "rocksdb" | "hdfs": the store the new state is written in
    partitions: int  # the state partitions the checkpoint pinned
    confs: dict[str, str]  # the spec's session confs (changelog checkpointing, retention)


def stored_state(spark: Any, checkpoint: Path, batch: int, **options: str) -> Any:
    """Every key's state at ``batch``: Spark's state reader, as ``key``, ``value``; ``options``
    are the reader's own (a transformWithState variable: ``stateVarName``)."""
    reader = spark.read.format("statestore").option("path", str(checkpoint))
    for k, v in {"batchId": str(batch), **options}.items():
        reader = reader.option(k, v)
    return reader.load()


def stored_row_type(state: Any) -> Any:
    """The state row Spark stored (``value.groupState`` of applyInPandasWithState)."""
    value = state.schema["value"].dataType
    if "groupState" not in value.fieldNames():
        raise UserError(
            "upgrade migrate rewrites applyInPandasWithState state only; this checkpoint's "
            f"state value is {value.simpleString()}"
        )
    return value["groupState"].dataType


def run(spark: Any, rw: Rewrite, rule: Rule, state: Any, live_store: str) -> int:
    """Rewrite ``state`` (:func:`stored_state` of the live checkpoint, kept in ``live_store``)
    into ``rw.staged`` as batch K+1's; the number of keys written."""
    if rule.kind == "same" and rw.store == live_store == "rocksdb":
        # the rows stay as they are and Spark's rewriter reads RocksDB: straight from the live
        # checkpoint, no seed (a watermark change)
        keys = int(state.count())
        place(spark, rw, rw.live, rw.batch)
    else:
        key_cols = [f.name for f in state.schema["key"].dataType.fields]
        has_timeout = "timeoutTimestamp" in state.schema["value"].dataType.fieldNames()
        seed = rw.work / "seed"
        keys = _write_seed(spark, state, key_cols, has_timeout, rule, rw.state_ddl, seed)
        seed_ck = rw.work / "seed_checkpoint"
        _seed_checkpoint(spark, rw, seed, seed_ck, key_cols, has_timeout)
        place(spark, rw, seed_ck, 0)
    check_written(stored_state(spark, rw.staged, rw.batch + 1).count(), keys)
    return keys


def check_written(found: int, keys: int) -> None:
    """The rewritten state holds every key the rule kept, or the migration stops here (the live
    checkpoint untouched)."""
    if found != keys:
        raise UserError(
            f"upgrade migrate: the rewritten state holds {found} keys, not the {keys} the rule "
            "gave; nothing changed"
        )


def _write_seed(
    spark: Any,
    state: Any,
    key_cols: list[str],
    has_timeout: bool,
    rule: Rule,
    state_ddl: str,
    seed: Path,
) -> int:
    from pyspark.sql import functions as F

    timeout = F.col("value.timeoutTimestamp") if has_timeout else F.lit(None)
    old = state.select(
        *[F.col("key")[c].alias(c) for c in key_cols],
        F.col("value.groupState").alias(SEED_STATE),
        timeout.cast("long").alias(SEED_TIMEOUT),
    )
    rows = rule.apply(old, key_cols, state_ddl).where(F.col(SEED_STATE).isNotNull())
    rows.write.mode("overwrite").parquet(str(seed))
    written = spark.read.parquet(str(seed))
    count = int(written.count())
    # One row with no state: the seed batch runs (and Spark writes every partition's store)
    # even when no key is left.
    sentinel = spark.createDataFrame([(None,) * len(written.columns)], written.schema)
    sentinel.write.mode("append").parquet(str(seed))
    return count


def _seed_fn(fields: list[str], key: Any, frames: Any, state: Any) -> Any:
    """Each key's one seed row into its state, with its timeout (a sentinel row has none)."""
    import pandas as pd

    for frame in frames:
        for value, timeout in zip(frame[SEED_STATE], frame[SEED_TIMEOUT], strict=True):
            if value is None:
                continue
            state.update(tuple(_plain(value[f]) for f in fields))
            if timeout is not None and timeout == timeout:  # NaN: no timeout
                state.setTimeoutTimestamp(int(timeout))
    yield pd.DataFrame({"_seeded": pd.Series([], dtype="int32")})


def _plain(v: Any) -> Any:
    """A value from Arrow/pandas as plain Python (lists, dicts, ints), as GroupState takes it."""
    import numpy as np

    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, np.ndarray) and v.dtype != object:
        return v.tolist()  # numbers and booleans at C speed: a bucket holds thousands of keys
    if isinstance(v, (list, tuple, np.ndarray)):
        return [x if isinstance(x, (str, int, float, bool)) else _plain(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


def _seed_checkpoint(
    spark: Any, rw: Rewrite, seed: Path, seed_ck: Path, key_cols: list[str], has_timeout: bool
) -> None:
    from functools import partial

    from pyspark.sql import functions as F

    session = spark.newSession()  # its own confs: the target store, the pinned partitions
    for k, v in rw.confs.items():
        session.conf.set(k, v)
    session.conf.set(
        "spark.sql.streaming.stateStore.providerClass", STATE_STORE_PROVIDERS[rw.store]
    )
    session.conf.set("spark.sql.shuffle.partitions", str(rw.partitions))
    schema = spark.read.parquet(str(seed)).schema
    fields = struct_type(rw.state_ddl).fieldNames()
    stream = session.readStream.schema(schema).parquet(str(seed))
    timeout_conf = "NoTimeout"
    if has_timeout:  # Spark wants a watermark for an event-time timeout. The seed's rows sit
        # one second after the epoch: at the epoch itself Spark drops them as late (time <= the
        # initial watermark 0), and no key's timeout is that early, so none fires.
        stream = stream.withColumn(SEED_TIME, F.lit(1).cast("timestamp")).withWatermark(
            SEED_TIME, "0 seconds"
        )
        timeout_conf = "EventTimeTimeout"
    query = (
        stream.groupBy(*key_cols)
        .applyInPandasWithState(
            partial(_seed_fn, fields), "_seeded int", rw.state_ddl, "append", timeout_conf
        )
        .writeStream.format("noop")
        .option("checkpointLocation", str(seed_ck))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    if query.exception() is not None:
        raise UserError(f"the seed query failed: {query.exception()}")


def place(spark: Any, rw: Rewrite, source: Path, read_batch: int) -> None:
    """``source``'s state at ``read_batch`` (the seed's, or the live one's) as the staged
    checkpoint's state after batch K+1 (version K+2)."""
    op = "0"
    target = rw.staged / "state" / op
    shutil.rmtree(rw.staged / "state", ignore_errors=True)
    target.mkdir(parents=True)
    shutil.copytree(source / "state" / op / "_metadata", target / "_metadata")
    for part in sorted((source / "state" / op).iterdir()):
        if part.name.isdigit() and (part / "_metadata").is_dir():
            shutil.copytree(part / "_metadata", target / part.name / "_metadata")
    version = rw.batch + 2
    if rw.store == "hdfs":  # the seed's one batch: its delta file of puts is that snapshot
        for part in sorted((source / "state" / op).iterdir()):
            if part.name.isdigit():
                (target / part.name).mkdir(exist_ok=True)
                shutil.copy2(part / "1.delta", target / part.name / f"{version}.snapshot")
        return
    jvm = spark._jvm
    none = jvm.scala.Option.apply(None)
    rewriter = getattr(jvm, REWRITER)(
        spark._jsparkSession,
        read_batch,
        rw.batch + 1,
        rw.staged.resolve().as_uri(),
        spark._jsparkSession.sessionState().newHadoopConf(),
        jvm.scala.Option.apply(source.resolve().as_uri()),
        none,
        none,
    )
    rewriter.run()
