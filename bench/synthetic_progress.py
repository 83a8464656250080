"""Synthetic progress logs shaped like Spark 4.2's own (a RocksDB stateful query's record is about
2.5 KB), for the health API's bench and the UI test: a job's history without running it.

The fields and their nesting copy a real ``StreamingQueryProgress`` of the ``sessions`` job; the
numbers follow a smooth daily-ish pattern with noise, so charts look like a live stream's.
"""

from __future__ import annotations

import json
import math
import random
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROCKSDB_METRICS = (
    "rocksdbBytesCopied",
    "rocksdbChangeLogWriterCommitLatencyMs",
    "rocksdbCommitCheckpointLatency",
    "rocksdbCommitCompactLatency",
    "rocksdbCommitFileSyncLatencyMs",
    "rocksdbCommitFlushLatency",
    "rocksdbFilesCopied",
    "rocksdbFilesReused",
    "rocksdbForceSnapshotCount",
    "rocksdbGetCount",
    "rocksdbGetLatency",
    "rocksdbLoadFromSnapshotLatencyMs",
    "rocksdbLoadLatencyMs",
    "rocksdbNumExternalColumnFamilies",
    "rocksdbNumInternalColFamiliesKeys",
    "rocksdbNumInternalColumnFamilies",
    "rocksdbNumLoadedFromDfs",
    "rocksdbNumReplayChangelogFiles",
    "rocksdbNumSnapshotsAutoRepaired",
    "rocksdbPinnedBlocksMemoryUsage",
    "rocksdbPutCount",
    "rocksdbPutLatency",
    "rocksdbReadBlockCacheHitCount",
    "rocksdbReadBlockCacheMissCount",
    "rocksdbReplayChangeLogLatencyMs",
    "rocksdbSaveZipFilesLatencyMs",
    "rocksdbSstFileSize",
    "rocksdbTotalBytesRead",
    "rocksdbTotalBytesReadByCompaction",
    "rocksdbTotalBytesReadThroughIterator",
    "rocksdbTotalBytesWritten",
    "rocksdbTotalBytesWrittenByCompaction",
    "rocksdbTotalBytesWrittenByFlush",
    "rocksdbTotalCompactionLatencyMs",
    "rocksdbWriterStallLatencyMs",
    "rocksdbZipFileBytesUncompressed",
)


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def record(
    job: str, batch: int, t: float, rng: random.Random, ids: tuple[str, str], keys: bool
) -> dict[str, Any]:
    """One batch's progress at time ``t`` (epoch seconds)."""
    wave = 1 + 0.5 * math.sin(batch / 40)
    rows = int(900 * wave * rng.uniform(0.8, 1.2))
    dur = int(1800 * wave * rng.uniform(0.7, 1.4))
    total = 40_000 + int(8_000 * math.sin(batch / 90)) + batch % 97
    dropped = rng.choice((0, 0, 0, 0, 0, 0, 0, 3, 12))
    rec: dict[str, Any] = {
        "id": ids[0],
        "runId": ids[1],
        "name": job,
        "timestamp": iso(t),
        "batchId": batch,
        "batchDuration": dur,
        "numInputRows": rows,
        "inputRowsPerSecond": round(rows / 30 * rng.uniform(0.9, 1.1), 1),
        "processedRowsPerSecond": round(rows / max(dur, 1) * 1000, 1),
        "durationMs": {
            "addBatch": int(dur * 0.8),
            "commitOffsets": 40,
            "getBatch": 20,
            "latestOffset": 15,
            "queryPlanning": 60,
            "triggerExecution": dur,
            "walCommit": 35,
        },
        "eventTime": {
            "avg": iso(t - 400),
            "max": iso(t - 30),
            "min": iso(t - 900),
            "watermark": iso(t - 30 - 600 - rng.uniform(0, 120)),
        },
        "stateOperators": [
            {
                "operatorName": "transformWithStateInPandasExec",
                "numRowsTotal": total if not keys else 256,
                "numRowsUpdated": min(rows, 256),
                "allUpdatesTimeMs": int(dur * 0.6),
                "numRowsRemoved": 3,
                "allRemovalsTimeMs": 4,
                "commitTimeMs": 120,
                "memoryUsedBytes": 40_000_000 + total * 400,
                "numRowsDroppedByWatermark": dropped,
                "numShufflePartitions": 4,
                "numStateStoreInstances": 4,
                "customMetrics": {m: rng.randint(0, 5000) for m in ROCKSDB_METRICS},
            }
        ],
        "sources": [
            {
                "description": f"FileStreamSource[file:/data/landing/{job}]",
                "startOffset": {"logOffset": batch - 1},
                "endOffset": {"logOffset": batch},
                "latestOffset": None,
                "numInputRows": rows,
                "inputRowsPerSecond": round(rows / 30, 1),
                "processedRowsPerSecond": round(rows / max(dur, 1) * 1000, 1),
            }
        ],
        "sink": {"description": f"DeltaSink[/data/tables/{job}]", "numOutputRows": -1},
        "statekeeper": {"job": job, "logged_at": t + dur / 1000},
    }
    if keys:  # the key-level metrics of an arbitrary-state job (docs/contracts.md §4)
        rec["keys"] = {"total": total, "updated": min(rows, total), "removed": 3, "expired": 1}
        rec["emitted"] = rows // 10
    return rec


def write_history(
    checkpoint: Path,
    job: str,
    batches: int,
    end: float,
    interval: float = 30.0,
    seed: int = 7,
    keys: bool = True,
) -> list[dict[str, Any]]:
    """Write ``batches`` records ending at ``end`` to the checkpoint's progress log, with the
    Spark files a validator reads (metadata, the last 20 offsets and commits); returns the last 20
    records."""
    rng = random.Random(seed)
    ids = (str(uuid.UUID(int=rng.getrandbits(128))), str(uuid.UUID(int=rng.getrandbits(128))))
    log = checkpoint / "_statekeeper" / "progress.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    tail: list[dict[str, Any]] = []
    with open(log, "w", encoding="utf-8") as fh:
        for b in range(batches):
            rec = record(job, b, end - (batches - 1 - b) * interval, rng, ids, keys)
            fh.write(json.dumps(rec, separators=(",", ":")) + "\n")
            if b >= batches - 20:
                tail.append(rec)
    (checkpoint / "metadata").write_text(json.dumps({"id": ids[0]}))
    for sub in ("offsets", "commits"):
        (checkpoint / sub).mkdir(exist_ok=True)
    for rec in tail:
        b, wm = rec["batchId"], rec["eventTime"]["watermark"]
        wm_ms = int(datetime.fromisoformat(wm.replace("Z", "+00:00")).timestamp() * 1000)
        meta = {
            "batchWatermarkMs": wm_ms,
            "batchTimestampMs": int(rec["statekeeper"]["logged_at"] * 1000),
            "conf": {},
        }
        (checkpoint / "offsets" / str(b)).write_text(f'v1\n{json.dumps(meta)}\n{{"logOffset":{b}}}')
        (checkpoint / "commits" / str(b)).write_text(f'v1\n{{"nextBatchWatermarkMs":{wm_ms}}}')
    return tail
