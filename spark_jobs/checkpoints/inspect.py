"""``inspect``: what a checkpoint holds, from its files (no Spark): batches, watermark, pinned
confs, state stores, the recovery window ``minBatchesToRetain`` leaves, sizes.

``--rows`` adds what only Spark's state reader knows (row counts per operator, and keys per bucket
for jobs on the batched executor); it starts Spark.
"""

from __future__ import annotations

import time
from typing import Any

from spark_jobs.checkpoints.layout import STATEKEEPER_DIR, Layout, read_layout
from spark_jobs.checkpoints.recovery import recovery_window

PINNED_SHOWN = (
    "spark.sql.shuffle.partitions",
    "spark.sql.streaming.stateStore.providerClass",
    "spark.sql.streaming.stateStore.rocksdb.formatVersion",
    "spark.sql.streaming.aggregation.stateFormatVersion",
    "spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion",
    "spark.sql.streaming.join.stateFormatVersion",
    "spark.sql.streaming.stateStore.encodingFormat",
    "spark.sql.streaming.stateStore.compression.codec",
)


def _iso(ms: Any) -> str | None:
    if not isinstance(ms, int | float) or ms <= 0:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000))


def inspect_checkpoint(checkpoint: str, layout: Layout | None = None) -> dict[str, Any]:
    started = time.perf_counter()
    lay = layout or read_layout(checkpoint)
    if not lay.exists:
        return {"checkpoint": checkpoint, "exists": False}
    last = lay.last_offset
    last_meta = lay.offset_meta.get(last, {}) if last is not None else {}
    pinned = lay.pinned_conf()
    operators = []
    for op in sorted(lay.operators, key=lambda o: (len(o), o)):
        stores = [s for s in lay.data_stores() if s.op == op]
        kinds: dict[str, int] = {}
        versions: set[int] = set()
        for s in stores:
            versions |= set(s.versions)
            for k, b in s.bytes_by_kind.items():
                kinds[k] = kinds.get(k, 0) + b
        meta = lay.operators.get(op) or {}
        operators.append(
            {
                "operator": op,
                "name": (meta.get("operatorInfo") or {}).get("operatorName"),
                "stores": sorted({s.store or "default" for s in stores}),
                "partitions": len({s.part for s in stores}),
                "provider": sorted({s.provider for s in stores}),
                "versions": [min(versions), max(versions)] if versions else None,
                "version_count": len(versions),
                "bytes_by_kind": dict(sorted(kinds.items())),
                "bytes": lay.total_bytes(f"state/{op}/"),
            }
        )
    window = recovery_window(lay)
    window["oldest_restorable_time"] = _iso(window.get("oldest_restorable_time_ms"))
    return {
        "checkpoint": checkpoint,
        "exists": True,
        "query_id": lay.query_id,
        "offsets": [lay.offsets[0], lay.offsets[-1]] if lay.offsets else None,
        "commits": [lay.commits[0], lay.commits[-1]] if lay.commits else None,
        "last_committed_batch": lay.last_committed,
        "uncommitted_batches": lay.uncommitted,
        "last_batch": last,
        "watermark": _iso(last_meta.get("batchWatermarkMs")),
        "watermark_ms": last_meta.get("batchWatermarkMs"),
        "batch_time": _iso(last_meta.get("batchTimestampMs")),
        "pinned_conf": {k: pinned[k] for k in PINNED_SHOWN if k in pinned},
        "repartitions": _repartitions(checkpoint),
        "operators": operators,
        "recovery_window": window,
        "sources": lay.source_logs,
        "kafka": _kafka(lay),
        "state_keys": _state_keys(checkpoint),
        "bytes": {
            "total": lay.total_bytes(),
            "offsets": lay.total_bytes("offsets/"),
            "commits": lay.total_bytes("commits/"),
            "sources": lay.total_bytes("sources/"),
            "state": lay.total_bytes("state/"),
            "statekeeper": lay.total_bytes(STATEKEEPER_DIR + "/"),
        },
        "files": len(lay.files),
        "seconds": round(time.perf_counter() - started, 4),
    }


def _kafka(lay: Any) -> dict[str, Any] | None:
    """Per-partition offsets of the Kafka sources: processed up to (the last committed batch's
    end offsets) and planned up to (the last batch's, when it is not committed yet)."""
    committed = lay.last_committed
    done = lay.kafka_offsets(committed) if committed is not None else {}
    planned = lay.kafka_offsets(lay.last_offset) if lay.last_offset is not None else {}
    if not done and not planned:
        return None
    return {
        "committed_batch": committed,
        "processed": done,
        "planned": planned if lay.last_offset != committed else None,
    }


def state_rows(checkpoint: str) -> list[dict[str, Any]]:
    """Rows per operator from Spark's state reader (starts Spark; optional). For a job on the
    batched executor a state row is a bucket of keys: the entry also says how many keys the
    buckets hold (``keys``) and how they spread (``keys_per_bucket``: min, median, max)."""
    from spark_jobs.runtime.session import build_session
    from spark_jobs.state.buckets import BUCKET, bucket_key_count

    spark = build_session("statekeeper-inspect")
    # The state stores report to the StateStoreCoordinator, which only exists once the session's
    # StreamingQueryManager does: a fresh session (the CLI's) must create it first.
    spark.streams.active  # noqa: B018
    out = []
    meta = spark.read.format("state-metadata").load(checkpoint).collect()
    for row in meta:
        d = row.asDict()
        state = (
            spark.read.format("statestore")
            .option("operatorId", d["operatorId"])
            .option("storeName", d["stateStoreName"])
            .load(checkpoint)
        )
        entry: dict[str, Any] = {
            "operator": str(d["operatorId"]),
            "store": d["stateStoreName"],
            "rows": state.count(),
        }
        key_type = state.schema["key"].dataType
        if BUCKET in getattr(key_type, "fieldNames", list)():
            counts = sorted(bucket_key_count(r["value"]) for r in state.select("value").collect())
            entry["keys"] = sum(counts)
            entry["keys_per_bucket"] = (
                [counts[0], counts[len(counts) // 2], counts[-1]] if counts else [0, 0, 0]
            )
        out.append(entry)
    return out


def _state_keys(checkpoint: str) -> dict[str, Any] | None:
    """The newest batch's key-level metrics from the progress log (read from its end): user keys,
    not the buckets Spark's state rows count for the batched executor."""
    from spark_jobs.contract.progress_log import BatchProgress, ProgressLog

    for rec in ProgressLog(checkpoint).backwards():
        if isinstance(rec, BatchProgress) and rec.keys is not None:
            return {"batch": rec.batch_id, **rec.raw["keys"]}  # the counts as the job logged them
    return None


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _repartitions(checkpoint: str) -> list[dict[str, Any]]:
    """``checkpoint repartition`` history from the checkpoint's binding (none when unreadable)."""
    from spark_jobs.contract.binding import read_binding
    from spark_jobs.contract.errors import UserError

    try:
        return list((read_binding(checkpoint) or {}).get("repartitions") or [])
    except UserError:
        return []  # validate reports a broken binding; inspect still shows the rest


def render(info: dict[str, Any]) -> str:
    if not info.get("exists"):
        return f"checkpoint {info['checkpoint']}: does not exist yet (a new job starts it)"
    lines = [
        f"checkpoint   {info['checkpoint']}",
        f"query id     {info['query_id'] or '(no readable metadata)'}",
    ]
    o, c = info["offsets"], info["commits"]
    lines.append(f"offsets      {o[0]}..{o[1]}" if o else "offsets      none")
    lines.append(f"commits      {c[0]}..{c[1]}" if c else "commits      none")
    lines.append(
        f"committed    batch {info['last_committed_batch']}"
        + (
            f"; started, not committed: {info['uncommitted_batches']}"
            if info["uncommitted_batches"]
            else ""
        )
    )
    lines.append(
        f"last batch   {info['last_batch']} at {info['batch_time'] or '?'}, watermark {info['watermark'] or 'none'}"
    )
    for k, v in info["pinned_conf"].items():
        lines.append(
            f"pinned       {k.removeprefix('spark.sql.')} = {v.rsplit('.', 1)[-1] if 'Provider' in v else v}"
        )
    k = info.get("state_keys")
    if k:
        lines.append(
            f"state keys   {k.get('total')} after batch {k.get('batch')} (updated {k.get('updated')}, "
            f"removed {k.get('removed')}, expired {k.get('expired')})"
        )
    for r in info.get("repartitions") or []:
        lines.append(
            f"repartition  {r.get('from')} -> {r.get('to')} partitions at batch {r.get('batch')} ({r.get('at')}), snapshot before: {r.get('snapshot')}"
        )
    for op in info["operators"]:
        v = op["versions"]
        kinds = ", ".join(f"{k} {_size(b)}" for k, b in op["bytes_by_kind"].items())
        lines.append(
            f"operator {op['operator']:<3} {op['name'] or '?'} [{'/'.join(op['provider'])}] {op['partitions']} partitions, "
            f"stores {','.join(op['stores'])}, versions {v[0]}..{v[1]} ({op['version_count']}), {_size(op['bytes'])}: {kinds}"
            if v
            else f"operator {op['operator']:<3} {op['name'] or '?'}: no state versions on disk"
        )
    for op in info.get("state_rows") or []:
        keys = (
            f" buckets holding {op['keys']} keys (per bucket min/median/max "
            f"{'/'.join(map(str, op['keys_per_bucket']))})"
            if "keys" in op
            else ""
        )
        lines.append(
            f"rows         operator {op['operator']} store {op['store']}: {op['rows']}{keys}"
        )
    w = info["recovery_window"]
    if w["oldest_restorable_batch"] is not None:
        lines.append(
            f"recoverable  back to batch {w['oldest_restorable_batch']} ({w['oldest_restorable_time'] or '?'}), {w['restorable_batches']} batches on disk"
        )
    else:
        lines.append("recoverable  no committed batch with its state on disk")
    for src, s in info["sources"].items():
        lines.append(f"source log   sources/{src}: {s['files']} files, {_size(s['bytes'])}")
    k = info.get("kafka") or {}
    for label in ("processed", "planned"):
        for topic, parts in (k.get(label) or {}).items():
            at = ", ".join(f"{p}@{o}" for p, o in sorted(parts.items(), key=lambda x: int(x[0])))
            when = f"batch {k['committed_batch']}" if label == "processed" else "uncommitted"
            lines.append(f"kafka        {topic} {label} to partition@offset {at} ({when})")
    b = info["bytes"]
    lines.append(
        f"size         {_size(b['total'])} in {info['files']} files (state {_size(b['state'])}, offsets+commits {_size(b['offsets'] + b['commits'])}, sources {_size(b['sources'])}, _statekeeper {_size(b['statekeeper'])})"
    )
    return "\n".join(lines)
