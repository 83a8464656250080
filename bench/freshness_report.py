"""What the freshness bench (:mod:`bench.freshness`) makes of a run: when each marker's row became
visible, its latency per window of the run, and the table it prints.

Two windows per contender: ``start``, the markers right after the warm-up (a fresh process's
first minute, while the JVM still compiles the batch's hot paths), and ``later``, the markers
after those (the steady state a continuous job spends its life in). One figure over both would
hide either.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from bench.freshness_builtin import BUILTIN_PROGRESS, JOB
from spark_jobs.contract.progress_log import iso_seconds

PARTS = ("latestOffset", "getBatch", "queryPlanning", "addBatch", "walCommit", "commitOffsets")
# A window's batches: those that started from its first marker's landing to this long after its
# last one's (the batch that picks the last marker up starts within a trigger or two).
BATCH_SLACK_SECONDS = 5.0


class Visible:
    """When each marker's row became readable in a Delta table: its ``_delta_log`` commits are
    read as they appear, and the data files each adds are searched for markers."""

    def __init__(self, table: Path) -> None:
        self.table = table
        self.next_version = 0
        self.seen: dict[str, float] = {}

    def poll(self) -> None:
        import pyarrow.parquet as pq

        while True:
            commit = self.table / "_delta_log" / f"{self.next_version:020d}.json"
            try:
                text = commit.read_text()
                at = commit.stat().st_mtime
            except FileNotFoundError:
                return
            if not text.endswith("\n") and not text.rstrip().endswith("}"):
                return  # not whole yet
            for line in text.splitlines():
                add = json.loads(line).get("add") if line.strip() else None
                if not add:
                    continue
                users = pq.read_table(self.table / unquote(add["path"]), columns=["user_id"])
                for u in users.column("user_id").to_pylist():
                    if u and u.startswith("m"):
                        self.seen.setdefault(u, at)
            self.next_version += 1


def progress_records(run: Path, ours: bool) -> list[dict[str, Any]]:
    if ours:
        from spark_jobs.runtime import progress

        return progress.read_progress(str(run / "ckpt"))
    log = run / BUILTIN_PROGRESS
    if not log.exists():
        return []
    return [json.loads(x) for x in log.read_text().splitlines() if x.strip()]


def _pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    return round(s[min(len(s) - 1, int(round(q * (len(s) - 1))))], 2)


def _med(rs: list[dict[str, Any]], part: str) -> float:
    vals = [float((r.get("durationMs") or {}).get(part, 0)) / 1000 for r in rs]
    return round(statistics.median(vals), 2) if vals else float("nan")


def windows(landed: dict[str, float], warm_up: int, start: int) -> list[tuple[str, list[str]]]:
    """The markers of each window, in landing order: ``start`` ones after the ``warm_up`` ones,
    then all the rest (``later``); a window without markers is left out."""
    markers = sorted(landed)
    out = [("start", markers[warm_up : warm_up + start]), ("later", markers[warm_up + start :])]
    return [(name, ms) for name, ms in out if ms]


def summarise(
    name: str, run: Path, ours: bool, landed: dict[str, float], warm_up: int, start: int
) -> list[dict[str, Any]]:
    """One row per window (:func:`windows`): the markers' latencies (visible - landed) and the
    medians of the data batches that ran in that window."""
    seen = Visible(run / "out")
    seen.poll()
    recs = progress_records(run, ours)
    data = [r for r in recs if int(r.get("numInputRows") or 0) > 0][1:]  # not the first batch
    idle = [r for r in recs if int(r.get("numInputRows") or 0) == 0 and r.get("batchId", 0) > 0]
    rows = []
    for window, measured in windows(landed, warm_up, start):
        delays = [seen.seen[m] - landed[m] for m in measured if m in seen.seen]
        lo, hi = landed[measured[0]], landed[measured[-1]] + BATCH_SLACK_SECONDS
        batches = [r for r in data if lo <= (iso_seconds(r.get("timestamp")) or 0.0) <= hi]
        rows.append(
            {
                "name": name,
                "window": window,
                "markers": len(delays),
                "of": len(measured),
                "p50": _pct(delays, 0.5),
                "p95": _pct(delays, 0.95),
                "max": round(max(delays), 2) if delays else float("nan"),
                "batch_p50": _med(batches, "triggerExecution"),
                "parts_p50": {p: _med(batches, p) for p in PARTS},
                "nothing_due_p50": _med(idle, "triggerExecution") if idle else None,
                "nothing_due_batches": len(idle),
                "batches": len(recs),
            }
        )
    return rows


def table(rows: list[dict[str, Any]], args: argparse.Namespace | None = None) -> str:
    head = f"== freshness: landing (or produce) -> row in Delta, {JOB}"
    if args is not None:
        head += f", trigger {args.trigger}, a marker every {args.every:g} s"
    lines = [
        "",
        head + " (target p50 <= 1.5 s, p95 <= 3 s) ==",
        f"{'input':<7}{'run':<14}{'window':<8}{'markers':>9}{'p50 s':>7}{'p95 s':>7}{'max s':>7}"
        f"{'batch s':>9}{'nothing-due s':>15}   data batch parts p50 s",
    ]
    for r in rows:
        nd = r["nothing_due_p50"]
        parts = " ".join(f"{k}={v}" for k, v in r["parts_p50"].items())
        lines.append(
            f"{r['input']:<7}{r['name']:<14}{r.get('window', ''):<8}{r['markers']:>5}/{r['of']:<3}"
            f"{r['p50']:>7}{r['p95']:>7}{r['max']:>7}{r['batch_p50']:>9}"
            f"{('-' if nd is None else nd):>15}   {parts}"
        )
    return "\n".join(lines)
