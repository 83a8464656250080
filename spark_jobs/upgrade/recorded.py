"""What a checkpoint and its table hold, read from files (no Spark): the binding, the offset
log's pinned confs, each operator's metadata and the state schema Spark stored, the Delta
table's schema, and the input a replay would need (:mod:`.replay`)."""

from __future__ import annotations

import json

from spark_jobs.checkpoints.files import filesystem
from spark_jobs.checkpoints.layout import Layout, read_layout
from spark_jobs.checkpoints.validate import PROVIDER_CONF, SHUFFLE_CONF
from spark_jobs.contract import binding, delta
from spark_jobs.contract.errors import UserError
from spark_jobs.state.buckets import BUCKET
from spark_jobs.upgrade import schemas
from spark_jobs.upgrade.facts import Recorded
from spark_jobs.upgrade.replay import replay_inputs

# The state store providers' class names (the offset log's conf) -> the spec's state_store
PROVIDERS = {"RocksDBStateStoreProvider": "rocksdb", "HDFSBackedStateStoreProvider": "hdfs"}
# applyInPandasWithState keeps the job's state row in this field of Spark's value schema
GROUP_STATE = "groupState"


def read_recorded(checkpoint: str, table: str | None, inputs: dict[str, str]) -> Recorded:
    """The live side of ``checkpoint``; ``table`` defaults to the one the binding names;
    ``inputs`` (kind -> URI, today's spec) are where a replay would read. A one-line UserError
    when there is nothing to compare with."""
    lay = read_layout(checkpoint, sizes=False)
    if not lay.exists:
        raise UserError(
            f"no checkpoint at {checkpoint}: the job has not run there; nothing to plan"
        )
    if lay.last_committed is None:
        raise UserError(
            f"checkpoint {checkpoint} has no committed batch yet; its first run starts from the "
            "job as declared now, nothing to plan"
        )
    record = binding.read_binding(checkpoint)
    if record is None:
        raise UserError(
            f"checkpoint {checkpoint} has no {binding.binding_path(checkpoint)}, so what its state "
            "was built with is not known: it was not written by a Statekeeper run; nothing to "
            "compare with"
        )
    bound = binding.bound_tables(checkpoint)
    out = Recorded(
        fingerprint=dict(record.get("fingerprint") or {}),
        checkpoint=checkpoint,
        table=table or (bound or {}).get("output", ""),
        last_committed=lay.last_committed,
    )
    pinned = lay.pinned_conf()  # what Spark itself will hold the query to
    if SHUFFLE_CONF in pinned:
        out.fingerprint["shuffle_partitions"] = int(pinned[SHUFFLE_CONF])
    provider = PROVIDERS.get(pinned.get(PROVIDER_CONF, "").rsplit(".", 1)[-1])
    if provider:
        out.fingerprint["state_store"] = provider
    out.operators = [
        str((m.get("operatorInfo") or {}).get("operatorName"))
        for _, m in sorted(lay.operators.items())
    ]
    key, value = stored_state_schema(lay)
    recorded_declaration = record.get(binding.DECLARATION) or {}
    out.state_schema = recorded_declaration.get("state_schema")
    declared_key = recorded_declaration.get("state_key")
    if declared_key is not None:
        out.state_key = list(declared_key)
    elif key is not None and [n for n, _ in key] != [BUCKET]:
        out.state_key = [n for n, _ in key]  # the per-key executor's groupBy columns
    if value is not None:
        out.state_value = value
    out.output = table_schema(out.table) if out.table else None
    out.dropped = {
        str(c["field"])
        for up in record.get(binding.UPGRADES) or []
        for c in up.get("changes") or []
        if str(c.get("field", "")).startswith("output.") and c.get("after") is None
    }
    out.inputs = replay_inputs(lay, inputs)
    return out


def stored_state_schema(lay: Layout) -> tuple[schemas.Fields | None, schemas.Fields | None]:
    """The key and the job's own state row Spark stored for the first operator (partition 0's
    ``_metadata/schema``); the value is the ``groupState`` struct of applyInPandasWithState,
    None for operators whose state row is Spark's own."""
    names = sorted(
        p for p in lay.files if p.startswith("state/") and p.endswith("/_metadata/schema")
    )
    if not names:
        return None, None
    fs, root = filesystem(lay.uri)
    structs = schemas.structs_in(fs.cat_file(f"{root}/{names[0]}"))
    if len(structs) < 2:
        return None, None
    key = schemas.json_fields(structs[0])
    value = None
    for f in structs[1].get("fields", []):
        if f.get("name") == GROUP_STATE and isinstance(f.get("type"), dict):
            value = schemas.json_fields(f["type"])
    return key, value


def table_schema(table: str) -> schemas.Fields | None:
    """The Delta table's columns from its log's newest ``metaData`` (None: no table yet)."""
    if not delta.exists(table):
        return None
    for v in reversed(delta.versions(table)):
        c = delta.commit(table, v)
        for line in c.lines if c else ():
            if '"metaData"' in line:
                meta = json.loads(line).get("metaData") or {}
                return schemas.json_fields(json.loads(meta.get("schemaString") or "{}"))
    return _checkpointed_schema(table)


def _checkpointed_schema(table: str) -> schemas.Fields | None:
    """The schema from the log's newest checkpoint, when cleanup removed the JSON commit that set
    it."""
    import pyarrow.parquet as pq

    fs, log = filesystem(delta.log_uri(table))
    parts = sorted(p for p in fs.ls(log, detail=False) if p.endswith(".checkpoint.parquet"))
    if not parts:
        return None
    with fs.open(parts[-1], "rb") as fh:
        rows = pq.read_table(fh, columns=["metaData"]).column("metaData").to_pylist()
    for m in rows:
        if m and m.get("schemaString"):
            return schemas.json_fields(json.loads(m["schemaString"]))
    return None
