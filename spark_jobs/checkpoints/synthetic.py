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


class LiveWriter:
    """A running query, files only: holds the job's lock (purpose ``run``) and writes batches
    in Spark's order (source log, offsets, state version N + 1, commit), each file written to a
    temp name and renamed as Spark does, while deleting state versions and logs older than
    ``retain`` batches (Spark's cleanup). For tests of what can be copied while a job runs."""

    def __init__(
        self, root: str | Path, partitions: int = 2, retain: int = 5, pause: float = 0.002
    ) -> None:
        import threading

        self.root = Path(root)
        self.partitions = partitions
        self.retain = retain
        self.pause = pause
        self.committed = -1
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> LiveWriter:
        from spark_jobs.contract.lock import JobLock

        make_checkpoint(self.root, batches=1, partitions=self.partitions, store="hdfs")
        self.committed = 0
        self._lock = JobLock(str(self.root), job="live", purpose="run").acquire()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self._lock.release()

    def _write(self, rel: str, data: bytes) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{uuid.uuid4()}.tmp")
        tmp.write_bytes(data)
        tmp.rename(path)

    def _run(self) -> None:
        import time

        b = self.committed + 1
        while not self._stop.is_set():
            self._write(f"sources/0/{b}", f"v1\n{json.dumps({'batchId': b})}".encode())
            offset = offset_text(b, self.partitions, HDFS, 1_767_225_600_000, 60_000)
            self._write(f"offsets/{b}", offset.encode())
            time.sleep(self.pause)  # the batch runs: a snapshot may list it now, uncommitted
            for part in range(self.partitions):
                self._write(f"state/0/{part}/{b + 1}.delta", os.urandom(64))
                if (b + 1) % 10 == 0:
                    self._write(f"state/0/{part}/{b + 1}.snapshot", os.urandom(64))
            self._write(f"commits/{b}", b'v1\n{"nextBatchWatermarkMs":0}')
            with open(self.root / "_statekeeper" / "progress.jsonl", "a") as fh:
                fh.write(json.dumps({"batchId": b}) + "\n")
            self.committed = b
            self._cleanup(b)
            b += 1

    def _cleanup(self, b: int) -> None:
        """Keep what restarts after the last ``retain`` batches need, as Spark does."""
        oldest = b - self.retain
        if oldest <= 0:
            return
        for part in range(self.partitions):
            d = self.root / f"state/0/{part}"
            whole = [
                int(p.name.split(".")[0])
                for p in d.glob("*.snapshot")
                if int(p.name.split(".")[0]) <= oldest + 1
            ]
            if not whole:
                continue
            floor = max(whole)
            for p in d.iterdir():
                if int(p.name.split(".")[0]) < floor:
                    p.unlink()
        for kind in ("offsets", "commits", "sources/0"):
            (self.root / kind / str(oldest - 1)).unlink(missing_ok=True)
