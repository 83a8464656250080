"""Checkpoint toolkit benchmark (not a test): inspect/validate on a synthetic checkpoint of 10,000
batches, and snapshot cost against the bytes that changed since the previous snapshot.

    PYTHONPATH=. .venv/bin/python -m bench.bench_checkpoints [--batches 10000] [--partitions 4]

Files only, no Spark. Prints one line per figure; ``--json`` for machines.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from spark_jobs.checkpoints.inspect import inspect_checkpoint
from spark_jobs.checkpoints.roots import Target
from spark_jobs.checkpoints.snapshots import take_snapshot
from spark_jobs.checkpoints.synthetic import make_checkpoint
from spark_jobs.checkpoints.validate import validate_checkpoint


def _best(fn: Any, repeat: int = 5) -> tuple[float, float, float]:
    """Best and median wall time, and the best CPU time (what an idle machine would take; the
    shared benchmark machine is often oversubscribed)."""
    times, cpu = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return min(times), statistics.median(times), min(cpu)


def _add_batches(ck: Path, start: int, count: int, partitions: int, size: int) -> int:
    """Append ``count`` batches as a running query would; returns the bytes written."""
    written = 0
    for b in range(start, start + count):
        for kind in ("offsets", "commits"):
            text = (ck / f"{kind}/{start - 1}").read_text()
            (ck / f"{kind}/{b}").write_text(text)
            written += len(text)
        for p in range(partitions):
            (ck / f"state/0/{p}/{b + 1}.changelog").write_bytes(os.urandom(size))
            written += size
    return written


def run(batches: int, partitions: int, repeat: int, skip_snapshots: bool = False) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="bench-ck-"))
    try:
        ck = tmp / "ck"
        t = time.perf_counter()
        make_checkpoint(
            ck,
            batches=batches,
            partitions=partitions,
            store="rocksdb",
            file_bytes=2048,
            unique=True,
        )
        files = sum(1 for _ in ck.rglob("*") if _.is_file())
        out: dict[str, Any] = {
            "batches": batches,
            "partitions": partitions,
            "files": files,
            "generate_s": round(time.perf_counter() - t, 2),
        }
        best, med, cpu = _best(lambda: inspect_checkpoint(str(ck)), repeat)
        out["inspect_s"] = {"best": round(best, 3), "median": round(med, 3), "cpu": round(cpu, 3)}
        best, med, cpu = _best(lambda: validate_checkpoint(str(ck)), repeat)
        out["validate_s"] = {"best": round(best, 3), "median": round(med, 3), "cpu": round(cpu, 3)}
        assert not validate_checkpoint(str(ck)).errors
        out["load_average"] = round(os.getloadavg()[0], 1)
        if skip_snapshots:
            return out

        target = Target(checkpoint=str(ck), snapshot_root=str(tmp / "snaps"), job="bench")
        s = take_snapshot(target)
        rows = [
            {
                "changed_bytes": s["bytes"],
                "new_bytes": s["new_bytes"],
                "seconds": s["seconds"],
                "what": "first (full)",
            }
        ]
        s = take_snapshot(target)
        rows.append(
            {
                "changed_bytes": 0,
                "new_bytes": s["new_bytes"],
                "seconds": s["seconds"],
                "what": "nothing changed",
            }
        )
        next_batch = batches
        for n in (10, 100, 1000):
            changed = _add_batches(ck, next_batch, n, partitions, 2048)
            next_batch += n
            s = take_snapshot(target)
            rows.append(
                {
                    "changed_bytes": changed,
                    "new_bytes": s["new_bytes"],
                    "seconds": s["seconds"],
                    "what": f"+{n} batches",
                }
            )
        out["total_bytes"] = s["bytes"]
        out["snapshots"] = rows
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batches", type=int, default=10_000)
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json", action="store_true")
    p.add_argument("--skip-snapshots", action="store_true", help="only inspect/validate")
    p.add_argument(
        "--smoke", action="store_true", help="1,000 batches, 2 repeats (python -m bench --smoke)"
    )
    args = p.parse_args(argv)
    if args.smoke:
        args.batches, args.repeat = min(args.batches, 1_000), 2
    r = run(args.batches, args.partitions, args.repeat, args.skip_snapshots)
    if args.json:
        print(json.dumps(r, indent=2))
        return 0
    ins, val = r["inspect_s"], r["validate_s"]
    print(
        f"synthetic checkpoint: {r['batches']} batches, {r['partitions']} partitions, "
        f"{r['files']} files (load average {r['load_average']})"
    )
    for name, t in (("inspect", ins), ("validate", val)):
        print(
            f"{name + ':':<10}best {t['best'] * 1000:.0f} ms, median {t['median'] * 1000:.0f} ms, "
            f"cpu {t['cpu'] * 1000:.0f} ms"
        )
    if "snapshots" not in r:
        return 0
    print(f"snapshot cost against changed bytes (checkpoint {r['total_bytes'] / 1e6:.1f} MB):")
    for row in r["snapshots"]:
        print(
            f"  {row['what']:<16} changed {row['changed_bytes'] / 1e6:8.2f} MB  stored {row['new_bytes'] / 1e6:8.2f} MB  {row['seconds']:6.2f} s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
