"""``python -m bench.table_maintain [--batches N]``: what small files cost readers and writers, and
what ``table maintain`` gives back.

``sessions`` runs N micro-batches (one landed file each: ``max_files_per_trigger: 1``, the file
count a continuous run on a short trigger leaves), then, before and after ``table maintain``:
the output's and quarantine's live files, the time to read the output whole with Spark (a warm
session, ``count`` of every column) and with delta-rs (``to_pyarrow_table``), and the duration of
one more micro-batch (``durationMs.triggerExecution`` of its progress record). Every step is its
own process, as users run them; the figures are printed side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from spark_jobs.contract import paths

ROOT = Path(__file__).resolve().parents[1]


def _cli(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "spark_jobs", *args],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args[:2])} failed: {done.stderr.strip()[-500:]}")
    return done.stdout


def _spec_folder(work: Path) -> Path:
    raw = yaml.safe_load((ROOT / "include" / "jobs" / "sessions.yaml").read_text())
    raw.update(
        inputs={"clickstream": str(work / "land")},
        output=str(work / "out"),
        checkpoint=str(work / "ckpt"),
        max_files_per_trigger=1,
        snapshots={},
    )
    folder = work / "specs"
    folder.mkdir()
    (folder / "sessions.yaml").write_text(yaml.safe_dump(raw))
    return folder


def _batch_ms(work: Path) -> list[int]:
    """``triggerExecution`` of every micro-batch that read rows, in order."""
    lines = (work / "ckpt" / "_statekeeper" / "progress.jsonl").read_text().splitlines()
    out = []
    for line in lines:
        rec = json.loads(line)
        ms = (rec.get("durationMs") or {}).get("triggerExecution")
        if rec.get("numInputRows") and ms is not None:
            out.append(int(ms))
    return out


def _last_batch_ms(work: Path) -> int | None:
    ms = _batch_ms(work)
    return ms[-1] if ms else None


def _reads(table: str) -> dict[str, float]:
    from deltalake import DeltaTable

    from spark_jobs.runtime.session import build_session

    spark = build_session("bench-table-maintain")
    try:
        df = spark.read.format("delta").load(table)
        df.count()  # warm: the session's first read pays for start-up
        started = time.perf_counter()
        spark.read.format("delta").load(table).selectExpr("count(*)", "max(session_end)").collect()
        spark_s = time.perf_counter() - started
    finally:
        spark.stop()
    started = time.perf_counter()
    DeltaTable(table).to_pyarrow_table()
    return {
        "spark_read_s": round(spark_s, 3),
        "delta_rs_read_s": round(time.perf_counter() - started, 3),
    }


def measure(env: dict[str, str], work: Path, part: int) -> dict[str, Any]:
    from spark_jobs.contract import delta

    out = str(work / "out")
    stats: dict[str, Any] = {
        "output": (delta.live_files(out) or delta.FileStats(0, 0)).to_dict(),
        "quarantine": (delta.live_files(f"{out}/_quarantine") or delta.FileStats(0, 0)).to_dict(),
    }
    stats.update(_reads(out))
    _cli(
        env,
        "generate",
        "clickstream",
        "--out",
        str(work / "land"),
        "--events",
        "200",
        "--seed",
        str(10_000 + part),
        "--files",
        "1",
    )
    _cli(env, "run", "sessions")
    stats["next_batch_ms"] = _last_batch_ms(work)
    return stats


def _env(work: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": f"{ROOT}:{ROOT / 'plugins'}",
        "STATEKEEPER_SPECS": str(_spec_folder(work)),
        **paths.roots_env(work),
    }


def _land(env: dict[str, str], work: Path, files: int, events_per_file: int) -> None:
    """``files`` landed clickstream files (1 % bad lines) under ``work/land``: one micro-batch
    each, as the spec's ``max_files_per_trigger: 1`` reads them."""
    _cli(
        env,
        "generate",
        "clickstream",
        "--out",
        str(work / "land"),
        "--events",
        str(files * events_per_file),
        "--files",
        str(files),
        "--bad-rate",
        "0.01",
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batches", type=int, default=500)
    p.add_argument("--events-per-batch", type=int, default=100)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-table-maintain-") as tmp:
        work = Path(tmp)
        env = _env(work)
        _land(env, work, args.batches, args.events_per_batch)
        started = time.perf_counter()
        _cli(env, "run", "sessions")  # one micro-batch per file
        print(f"{args.batches} micro-batches in {time.perf_counter() - started:.0f} s", flush=True)
        before = measure(env, work, 1)
        report = json.loads(_cli(env, "table", "maintain", "sessions", "--json"))
        after = measure(env, work, 2)
    print(f"maintain: {report['seconds']:.1f} s")
    print(f"{'':24}{'before':>14}{'after':>14}")
    rows = [
        ("output live files", before["output"]["files"], after["output"]["files"]),
        ("quarantine live files", before["quarantine"]["files"], after["quarantine"]["files"]),
        (
            "output avg file bytes",
            before["output"]["average_bytes"],
            after["output"]["average_bytes"],
        ),
        ("Spark read (s)", before["spark_read_s"], after["spark_read_s"]),
        ("delta-rs read (s)", before["delta_rs_read_s"], after["delta_rs_read_s"]),
        ("next batch (ms)", before["next_batch_ms"], after["next_batch_ms"]),
    ]
    for name, b, a in rows:
        print(f"{name:24}{b!s:>14}{a!s:>14}")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
