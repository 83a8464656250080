"""Benchmark 4: RocksDB with changelog checkpointing against the HDFS-backed state store, the
same sessions run on each: batch and commit time, checkpoint bytes per batch."""

from __future__ import annotations

import shutil
import statistics
from pathlib import Path
from typing import Any

from bench.suite import dataset, job_spec


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def stores(spark: Any, root: Path, events: int, keys: int, files: int) -> list[dict[str, Any]]:
    from spark_jobs.jobs.runner import run_job
    from spark_jobs.runtime.progress import read_progress

    data = dataset(root, "clickstream", events, keys, files=files)
    out = []
    print(
        f"  state stores: sessions (batched), {events:,} events, {keys:,} users, {files} batches",
        flush=True,
    )
    for name, store, changelog in (("rocksdb+changelog", "rocksdb", True), ("hdfs", "hdfs", False)):
        work = root / "runs" / f"store-{store}"
        shutil.rmtree(work, ignore_errors=True)
        spec = job_spec(
            "sessions",
            data,
            work,
            executor="batched",
            state_store=store,
            changelog_checkpointing=changelog,
            max_files_per_trigger=1,
            min_batches_to_retain=1000,
        )
        run_job(spec, spark=spark)
        recs = [r for r in read_progress(spec.checkpoint) if r.get("name") == "sessions"]
        durations = [int(r["durationMs"].get("triggerExecution", 0)) for r in recs]
        commits = [
            sum(int(o.get("commitTimeMs") or 0) for o in r.get("stateOperators") or [])
            for r in recs
        ]
        state_bytes = _dir_bytes(work / "ckpt" / "state")
        res: dict[str, Any] = {
            "store": name,
            "batches": len(recs),
            "batch_ms_median": int(statistics.median(durations)) if durations else 0,
            "commit_ms_median": int(statistics.median(commits)) if commits else 0,
            "checkpoint_bytes_per_batch": state_bytes // max(1, len(recs)),
            "state_dir_bytes": state_bytes,
        }
        shutil.rmtree(work, ignore_errors=True)
        print(
            f"    {name:<18} batch {res['batch_ms_median']:>6} ms  commit {res['commit_ms_median']:>5} ms  checkpoint {res['checkpoint_bytes_per_batch'] / 1024:>8,.0f} KiB/batch",
            flush=True,
        )
        out.append(res)
    return out
