"""The state rewrite of a transformWithState job (``service_health``): one state variable at a
time, timers kept (:mod:`spark_jobs.upgrade.rewrite` does the applyInPandasWithState jobs).

The same three steps, with transformWithState's own way in for seeding: the state reader reads
each variable (``stateVarName``; a list state one row per element) and the registered timers
(``readRegisteredTimers``) at batch K; each variable's rows become the declared row (the
variable's fields added with the job's ``state_defaults`` or null, removed ones dropped); the seed
query hands them to :class:`SeedProcessor` as ``initialState`` (the public way in), which puts
each variable back and registers each timer again; Spark's ``StateRewriter`` places that state
as the new checkpoint's batch K+1. Spark writes absolute paths to the state schema files into a
transformWithState checkpoint's operator metadata: they are pointed at the live checkpoint's
folder, where the swap puts the files.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pyspark.sql.streaming.stateful_processor import StatefulProcessor

from spark_jobs.contract.errors import UserError
from spark_jobs.io.tables import column_names
from spark_jobs.jobs import query_wait
from spark_jobs.upgrade.rewrite import Rewrite, _plain, check_written, place, stored_state
from spark_jobs.upgrade.rules import struct_type

VAR, VALUE = "_var", "_value"
TIMER = "$timer"  # the _var of a registered timer's row
KINDS = ("ValueState", "ListState")


class SeedProcessor(StatefulProcessor):
    """Puts each key's seed rows into its state variables and registers its timers; reads no
    input (the one sentinel input row has no key)."""

    def __init__(self, variables: list[tuple[str, str, str]]) -> None:
        self.variables = variables  # (name, kind, DDL)

    def init(self, handle: Any) -> None:
        self.handle = handle
        self.states: dict[str, tuple[str, Any, list[str]]] = {}
        for name, kind, ddl in self.variables:
            get = handle.getValueState if kind == "ValueState" else handle.getListState
            # field names by the pure DDL reader: this runs in Python workers without a JVM
            self.states[name] = (kind, get(name, ddl), column_names(ddl))

    def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Iterator[Any]:
        return iter(())

    def handleInitialState(self, key: Any, initialState: Any, timerValues: Any) -> None:
        lists: dict[str, list[tuple[Any, ...]]] = {}
        # PySpark hands the value columns over by position (named _1, _2 after the key's)
        variables, values = initialState.iloc[:, -2], initialState.iloc[:, -1]
        for var, text in zip(variables, values, strict=True):
            if var == TIMER:
                self.handle.registerTimer(int(text))
                continue
            kind, state, fields = self.states[var]
            value = json.loads(text)
            row = tuple(_plain(value.get(f)) for f in fields)
            if kind == "ValueState":
                state.update(row)
            else:
                lists.setdefault(var, []).append(row)
        for var, rows in lists.items():
            self.states[var][1].put(rows)

    def close(self) -> None:
        pass


def stored_variables(live: Path) -> dict[str, str]:
    """State variable -> kind, from the operator metadata Spark wrote (newest batch's)."""
    folder = live / "state" / "0" / "_metadata" / "v2"
    files = sorted((p for p in folder.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    meta = json.loads(files[-1].read_text().split("\n", 1)[1])
    props = json.loads(meta["operatorPropertiesJson"])
    return {
        v["stateName"]: v["stateVariableType"]
        for v in props["stateVariables"]
        if not v["stateName"].startswith("$")
    }


def run(
    spark: Any, rw: Rewrite, declared: dict[str, str], defaults: dict[str, Any], time_mode: str
) -> int:
    """Rewrite a transformWithState job's state into ``rw.staged`` as batch K+1's; the number of
    keys written."""
    from pyspark.sql import functions as F

    kinds = stored_variables(rw.live)
    if set(kinds) != set(declared) or any(k not in KINDS for k in kinds.values()):
        raise UserError(
            f"upgrade migrate: state variables {sorted(kinds)} ({', '.join(kinds.values())}) "
            f"cannot become {sorted(declared)}: only the fields inside value and list state "
            "variables can change; nothing changed"
        )
    parts, key_cols = [], []
    for var, kind in kinds.items():
        df = stored_state(spark, rw.live, rw.batch, stateVarName=var)
        key_cols = [f.name for f in df.schema["key"].dataType.fields]
        column = "value" if kind == "ValueState" else "list_element"
        new = _convert(
            F.col(column), df.schema[column].dataType, struct_type(declared[var]), defaults
        )
        parts.append(
            df.select(*_keys(key_cols), F.lit(var).alias(VAR), F.to_json(new).alias(VALUE))
        )
    timers = stored_state(spark, rw.live, rw.batch, readRegisteredTimers="true")
    parts.append(
        timers.select(
            *_keys(key_cols),
            F.lit(TIMER).alias(VAR),
            F.col("expiration_timestamp_ms").cast("string").alias(VALUE),
        )
    )
    seed = rw.work / "seed"
    initial = parts[0]
    for p in parts[1:]:
        initial = initial.unionByName(p)
    initial.write.mode("overwrite").parquet(str(seed))
    initial = spark.read.parquet(str(seed))
    keys = int(initial.select(*key_cols).distinct().count())
    seed_ck = rw.work / "seed_checkpoint"
    variables = [(v, kinds[v], declared[v]) for v in kinds]
    _seed(spark, rw, initial, seed_ck, key_cols, variables, time_mode)
    place(spark, rw, seed_ck, 0)
    written = [
        stored_state(spark, rw.staged, rw.batch + 1, stateVarName=v).select("key") for v in kinds
    ]
    found = written[0]
    for w in written[1:]:
        found = found.union(w)
    check_written(found.distinct().count(), keys - _timer_only(initial, key_cols))
    _point_metadata_at(rw, seed_ck)
    return keys


def _timer_only(initial: Any, key_cols: list[str]) -> int:
    """Keys with a timer and no variable (they hold no row to count)."""
    from pyspark.sql import functions as F

    per_key = initial.groupBy(*key_cols).agg(F.max((F.col(VAR) != TIMER).cast("int")).alias("v"))
    return int(per_key.where(F.col("v") == 0).count())


def _keys(key_cols: list[str]) -> list[Any]:
    from pyspark.sql import functions as F

    return [F.col("key")[c].alias(c) for c in key_cols]


def _convert(col: Any, old: Any, new: Any, defaults: dict[str, Any]) -> Any:
    """A variable's row as the declared one: fields kept by name, added ones defaulted."""
    from pyspark.sql import functions as F

    have = {f.name: f.dataType for f in old.fields}
    for f in new.fields:
        if f.name in have and have[f.name] != f.dataType:
            raise UserError(
                f"upgrade migrate: state field {f.name} changes type "
                f"({have[f.name].simpleString()} -> {f.dataType.simpleString()}); a "
                "transformWithState variable's fields can be added or removed only; nothing changed"
            )
    return F.struct(
        *[
            (col[f.name] if f.name in have else F.lit(defaults.get(f.name)))
            .cast(f.dataType)
            .alias(f.name)
            for f in new.fields
        ]
    )


def _seed(
    spark: Any,
    rw: Rewrite,
    initial: Any,
    seed_ck: Path,
    key_cols: list[str],
    variables: list[tuple[str, str, str]],
    time_mode: str,
) -> None:
    from pyspark.sql import functions as F

    session = spark.newSession()
    for k, v in rw.confs.items():
        session.conf.set(k, v)
    session.conf.set("spark.sql.shuffle.partitions", str(rw.partitions))
    sentinel = rw.work / "sentinel"
    key_types = {f.name: f.dataType for f in initial.schema.fields}
    row = spark.createDataFrame(
        [tuple(None for _ in key_cols)],
        ", ".join(f"`{c}` {key_types[c].simpleString()}" for c in key_cols),
    )
    row.write.mode("overwrite").parquet(str(sentinel))
    stream = session.readStream.schema(row.schema).parquet(str(sentinel))
    if time_mode == "EventTime":  # a watermark at the epoch: no timer fires in the seed
        stream = stream.withColumn("_t", F.lit(0).cast("timestamp")).withWatermark(
            "_t", "0 seconds"
        )
    seed = (
        stream.groupBy(*key_cols)
        .transformWithStateInPandas(
            statefulProcessor=SeedProcessor(variables),
            outputStructType="_seeded int",
            outputMode="Append",
            timeMode=time_mode,
            initialState=session.read.parquet(str(rw.work / "seed")).groupBy(*key_cols),
        )
        .writeStream.format("noop")
        .option("checkpointLocation", str(seed_ck))
        .trigger(availableNow=True)
    )
    # Its planning starts Spark's driver-side Python worker, as a run's does: a slow start is
    # retried from the seed's own checkpoint the same way.
    query_wait.wait_restarting(seed.start, [], None)


def _point_metadata_at(rw: Rewrite, seed_ck: Path) -> None:
    """The staged operator metadata names the seed's schema files by absolute path: copy the
    files beside it and name them where they will be once the staged checkpoint is live."""
    src, dst = seed_ck / "state" / "0" / "_stateSchema", rw.staged / "state" / "0" / "_stateSchema"
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    old_uri, new_uri = seed_ck.resolve().as_uri(), rw.live.resolve().as_uri()
    # Spark writes "file:/path" (one slash): replace both spellings
    pairs = [
        (old_uri, new_uri),
        (old_uri.replace("file:///", "file:/"), new_uri.replace("file:///", "file:/")),
    ]
    for meta in (rw.staged / "state" / "0" / "_metadata" / "v2").iterdir():
        if not meta.name.isdigit():
            continue
        text = meta.read_text()
        for a, b in pairs:
            text = text.replace(a, b)
        meta.write_text(text)
        # Hadoop's checksum of the old text would fail the read: none is read as none
        meta.with_name(f".{meta.name}.crc").unlink(missing_ok=True)
