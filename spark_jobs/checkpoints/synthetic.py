"""A synthetic checkpoint in Spark's layout, files only (no Spark): for the benchmark and for unit
tests of the readers. The file contents copy what Spark 4.2 writes."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
HDFS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"


def offset_text(batch: int, partitions: int, provider: str, t0_ms: int, interval_ms: int) -> str:
    meta = {
        "batchWatermarkMs": t0_ms + batch * interval_ms - 600_000,
        "batchTimestampMs": t0_ms + batch * interval_ms,
        "conf": {
            "spark.sql.streaming.stateStore.providerClass": provider,
            "spark.sql.shuffle.partitions": str(partitions),
        },
    }
    return "v1\n" + json.dumps(meta) + "\n" + json.dumps({"logOffset": batch})


def make_checkpoint(
    root: str | Path,
    batches: int,
    partitions: int = 4,
    store: str = "rocksdb",
    first_batch: int = 0,
    state_versions: int | None = None,
    snapshot_every: int = 10,
    file_bytes: int = 200,
    t0_ms: int = 1_767_225_600_000,
    interval_ms: int = 60_000,
    unique: bool = False,
) -> Path:
    """Write batches ``first_batch .. batches-1`` (offsets, commits, source log) and, per
    partition, the last ``state_versions`` state versions (all by default). ``unique`` gives
    every state file its own random content (as real state files have); else they share one."""
    root = Path(root)
    provider = ROCKSDB if store == "rocksdb" else HDFS
    for sub in ("offsets", "commits", "sources/0", "state/0/_metadata"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "metadata").write_text(json.dumps({"id": str(uuid.UUID(int=7))}) + "\n")
    op_meta = {
        "operatorInfo": {"operatorId": 0, "operatorName": "stateStoreSave"},
        "stateStoreInfo": [
            {"storeName": "default", "numColsPrefixKey": 0, "numPartitions": partitions}
        ],
    }
    (root / "state/0/_metadata/metadata").write_text("v1\n" + json.dumps(op_meta))
    for b in range(first_batch, batches):
        (root / f"offsets/{b}").write_text(offset_text(b, partitions, provider, t0_ms, interval_ms))
        (root / f"commits/{b}").write_text(
            "v1\n" + json.dumps({"nextBatchWatermarkMs": t0_ms + b * interval_ms})
        )
        (root / f"sources/0/{b}").write_text(
            "v1\n"
            + json.dumps({"path": f"file:///landing/f{b}.json", "timestamp": t0_ms, "batchId": b})
        )
    last_version = batches  # batch N commits version N + 1
    first_version = 1 if state_versions is None else max(1, last_version - state_versions + 1)
    shared = os.urandom(file_bytes)

    def blob() -> bytes:
        return os.urandom(file_bytes) if unique else shared

    for part in range(partitions):
        d = root / f"state/0/{part}"
        d.mkdir(parents=True, exist_ok=True)
        for v in range(first_version, last_version + 1):
            if store == "rocksdb":
                (d / f"{v}.changelog").write_bytes(blob())
                if v % snapshot_every == 0 or v == first_version:
                    (d / f"{v}.zip").write_bytes(blob())
            else:
                (d / f"{v}.delta").write_bytes(blob())
                if v % snapshot_every == 0 or v == first_version:
                    (d / f"{v}.snapshot").write_bytes(blob())
        if store == "rocksdb":
            (d / "SSTs").mkdir(exist_ok=True)
            (d / f"SSTs/000001-{uuid.UUID(int=part)}.sst").write_bytes(blob())
    return root
