"""The batching-invariance harness's moving parts: one pool of generated events per job, cut
into arrivals that overlap by less than the job's watermark delay (lines shuffled inside each
file), hopelessly late events, a flush far ahead, and all seven jobs run side by side in one
Spark session (or in a child process that a test kills).

Run as ``python -m invariance PLAN.json`` (from tests/integration) it is that child: it runs
every (job, folder) of the plan at once in its own session and exits.
"""

from __future__ import annotations

import json
import os
import random
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from jobkit import job_spec

from spark_jobs.contract.spec import load_spec
from spark_jobs.generate import generate

JOBS = (
    "sessions",
    "fraud_alerts",
    "service_health",
    "user_counts",
    "windowed_counts",
    "dedup_events",
    "order_payments",
)
SIZE = {"clickstream": (900, 25), "auth": (900, 25), "service-logs": (400, 6), "orders": (250, 25)}
FLUSH_AHEAD = timedelta(hours=6)  # past every gap, window, timeout and join bound plus delay
LATE_BEHIND = timedelta(days=2)


def event_time(line: str) -> datetime | None:
    try:
        t = json.loads(line)["event_time"]
        out = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return out if out.tzinfo is not None else None


def iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def pool(folder: Path, job: str, seed: int) -> dict[str, list[str]]:
    """Generated lines per kind of ``job`` (bad lines and duplicates included)."""
    out: dict[str, list[str]] = {}
    for kind in load_spec(job).kinds:
        target = folder / kind
        if kind == "payments":
            n = SIZE["orders"][0]  # about one payment per order (some unpaid, some late)
            generate(kind, str(target), n, seed=seed, orders_from=str(folder / "orders"))
        else:
            n, keys = SIZE[kind]
            # Duplicates only where a job handles them (dedup_events); a duplicated order would
            # break order_payments' key, which the contract's input does not do.
            dup = 0.02 if kind == "clickstream" else 0.0
            generate(kind, str(target), n, keys=keys, seed=seed, bad_rate=0.03, dup_rate=dup)
        files = [f for f in sorted(target.glob("*.json*")) if f.name[0] not in "._"]
        out[kind] = [ln for f in files for ln in f.read_text().splitlines()]
    return out


def extras(lines: dict[str, list[str]]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(late, flush): a few events ``LATE_BEHIND`` the earliest, new ids; and per kind one event
    ``FLUSH_AHEAD`` of the latest, from a key of its own, that moves the watermark past all."""
    times = [t for ls in lines.values() for ln in ls if (t := event_time(ln))]
    first, last = min(times), max(times)
    late: dict[str, list[str]] = {}
    flush: dict[str, list[str]] = {}
    for kind, ls in lines.items():
        good = [json.loads(ln) for ln in ls if event_time(ln)][:3]
        late[kind] = []
        for i, e in enumerate(good):
            e = {**e, "event_time": iso(first - LATE_BEHIND + timedelta(minutes=i))}
            for f in ("event_id", "order_id", "payment_id"):
                if f in e:
                    e[f] = f"late-{i}-{e[f]}"
            late[kind].append(json.dumps(e))
        f = {**good[0], "event_time": iso(last + FLUSH_AHEAD)}
        for k in ("event_id", "payment_id"):
            if k in f:
                f[k] = f"flush-{k}"
        for k in ("user_id", "service", "order_id"):
            if k in f:
                f[k] = "flush"
        flush[kind] = [json.dumps(f)]
    return late, flush


def cut(
    lines: dict[str, list[str]], parts: int, overlap: timedelta, rng: random.Random
) -> list[dict[str, list[str]]]:
    """``parts`` chunks in event-time order (shared cut points across kinds); an event within
    ``overlap`` before a cut may come with the next chunk instead, i.e. after newer events;
    bad lines go anywhere; lines are shuffled inside each chunk."""
    times = sorted(t for ls in lines.values() for ln in ls if (t := event_time(ln)))
    cuts = [times[len(times) * i // parts] for i in range(1, parts)]
    chunks: list[dict[str, list[str]]] = [{k: [] for k in lines} for _ in range(parts)]
    for kind, ls in lines.items():
        for ln in ls:
            t = event_time(ln)
            if t is None:
                chunks[rng.randrange(parts)][kind].append(ln)
                continue
            i = sum(t >= c for c in cuts)
            if i < parts - 1 and cuts[i] - t < overlap and rng.random() < 0.6:
                i += 1
            chunks[i][kind].append(ln)
    for c in chunks:
        for ls in c.values():
            rng.shuffle(ls)
    return chunks


class Landing:
    """A job's landing folders; files get increasing modification times, so a source taking one
    file per batch takes them in the order they were landed."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.n = 0

    def land(self, chunk: dict[str, list[str]]) -> None:
        self.n += 1
        for kind, ls in chunk.items():
            folder = self.root / "land" / kind
            folder.mkdir(parents=True, exist_ok=True)
            p = folder / f"part-{self.n:03d}.json"
            p.write_text("".join(ln + "\n" for ln in ls))
            stamp = 1_700_000_000 + self.n * 10
            os.utime(p, (stamp, stamp))


def spec_for(job: str, root: Path, files_per_batch: int = 1) -> Any:
    """The job's real spec on ``root`` (two partitions), a few files per batch: runs have
    several batches, so the watermark moves inside a run too."""
    return replace(job_spec(job, root), max_files_per_trigger=files_per_batch)


def run_all(plan: list[tuple[str, Path]], spark: Any = None, files_per_batch: int = 1) -> None:
    """Run every (job, root) at once, each to the end of its input (available-now)."""
    from spark_jobs.jobs.runner import run_job

    # A few at a time: side by side they share the cores, all seven at once mostly queue.
    with ThreadPoolExecutor(max_workers=min(4, len(plan))) as pool_:
        futures = [
            pool_.submit(run_job, spec_for(job, root, files_per_batch), spark=spark)
            for job, root in plan
        ]
        for f in futures:
            f.result()


def main(argv: list[str]) -> int:
    from spark_jobs.runtime.session import build_session

    plan = [(job, Path(root)) for job, root in json.loads(Path(argv[0]).read_text())]
    spark = build_session(
        "statekeeper-invariance-child",
        conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"},
    )
    run_all(plan, spark)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
