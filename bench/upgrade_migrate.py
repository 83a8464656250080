"""``python -m bench.upgrade_migrate``: migrate 1M keys of ``sessions`` state against rebuilding
the same state from its events (issue 26), as whole processes, side by side in one run.

It lands ``--events`` clickstream events of ``--users`` distinct users (every user one event,
every 100th a few more) whose event times all fall within 20 minutes of the newest: less than
the 30-minute session gap plus the 10-minute watermark delay, so no session closes and every
user is a key in state after the run. Then, interleaved, ``--rounds`` times each:

- **rebuild** (what a user must do without ``migrate``): ``python -m spark_jobs run sessions``
  over all those events into a fresh checkpoint and table;
- **migrate**: the checkpoint and table the first rebuild left, restored fresh (and the
  snapshot store emptied) before each round, with the spec changed from ``state_store:
  rocksdb`` to ``hdfs`` (a change only a state rewrite can make), ``python -m spark_jobs
  upgrade migrate sessions``; its line must say the state was rewritten, and ``upgrade plan``
  after it must exit 0.

Each command is timed from its start to its exit. Users in state are counted by ``checkpoint
inspect sessions --rows --json`` after the first rebuild and the first migrate: the batched
executor keeps ``params.buckets`` state rows, each a bucket of users, and inspect sums the users
the buckets hold; ``migrate`` reports the state rows (buckets) it rewrote. After the first
migrate, ``run sessions`` goes on from the migrated checkpoint (untimed): it must read no event
again, and every user must still be in state. Everything lives under
a temporary ``STATEKEEPER_DATA``, so the spec's own relative paths are confined there.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
JOB = "sessions"
NEWEST = datetime(2026, 3, 15, 12, 20, tzinfo=UTC)  # the newest event time landed
SPREAD_S = 20 * 60  # every event within this of the newest: under the gap (30 min) + delay
FILES = 8
REWRITTEN = re.compile(r"state rewritten \((\d+) keys")


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def land(folder: Path, users: int, events: int) -> int:
    """``events`` (at least ``users``) clickstream lines in ``FILES`` files: user i's first event
    at NEWEST - (i mod SPREAD_S) s; the events beyond one per user go, evenly, to every 100th
    user, a second apart after its first. Returns the events written."""
    folder.mkdir(parents=True, exist_ok=True)
    extra = max(0, events - users)
    per = -(-extra // -(-users // 100))  # the extras, spread evenly over every 100th user
    lines: list[str] = []
    for i in range(users):
        t = NEWEST - timedelta(seconds=i % SPREAD_S)
        n = 1
        if extra and i % 100 == 0:
            n += min(extra, per)
            extra -= n - 1
        for k in range(n):
            lines.append(
                json.dumps(
                    {
                        "event_id": f"e{i}-{k}",
                        "user_id": f"u{i:07d}",
                        "event_type": "page_view",
                        "page": f"/product/{k}",
                        "duration_sec": 5,
                        "event_time": _iso(min(NEWEST, t + timedelta(seconds=k))),
                    }
                )
            )
    per = -(-len(lines) // FILES)
    for f in range(FILES):
        tmp = folder / f".clicks-{f:02d}.json"
        tmp.write_text("\n".join(lines[f * per : (f + 1) * per]) + "\n")
        os.replace(tmp, folder / tmp.name[1:])  # whole files only
    return len(lines)


def _specs(work: Path, store: str) -> Path:
    """A copy of the packaged spec with ``state_store: store``; its relative paths resolve
    under STATEKEEPER_DATA."""
    raw = yaml.safe_load((ROOT / "include" / "jobs" / f"{JOB}.yaml").read_text())
    raw["state_store"] = store
    folder = work / f"specs-{store}"
    folder.mkdir()
    (folder / f"{JOB}.yaml").write_text(yaml.safe_dump(raw))
    return folder


def _env(data: Path, specs: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": f"{ROOT}:{ROOT / 'plugins'}",
        "STATEKEEPER_HOME": str(ROOT),
        "STATEKEEPER_DATA": str(data),
        "STATEKEEPER_SPECS": str(specs),
        "PYSPARK_PYTHON": sys.executable,
    }


def _cli(env: dict[str, str], *args: str, ok: tuple[int, ...] = (0,)) -> tuple[float, str]:
    """One whole ``python -m spark_jobs`` process: its seconds from start to exit, its stdout."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "spark_jobs", *args],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    seconds = time.perf_counter() - started
    if done.returncode not in ok:
        raise SystemExit(
            f"{' '.join(args[:3])} exited {done.returncode}: {done.stderr.strip()[-800:]}"
        )
    return seconds, done.stdout


def users_in_state(env: dict[str, str]) -> int:
    """Users held in the job's state: the keys its buckets hold, summed by ``checkpoint
    inspect --rows`` (Spark's state reader)."""
    _, out = _cli(env, "checkpoint", "inspect", JOB, "--rows", "--json")
    rows = json.loads(out)["state_rows"]
    return sum(int(r.get("keys", r["rows"])) for r in rows)


def events_read(data: Path) -> int:
    """Input rows of every batch, from the job's progress log."""
    log = data / "checkpoints" / JOB / "_statekeeper" / "progress.jsonl"
    return sum(
        int(json.loads(line).get("numInputRows") or 0) for line in log.read_text().splitlines()
    )


def _summary(seconds: list[float]) -> dict[str, Any]:
    return {
        "min_s": round(min(seconds), 1),
        "median_s": round(statistics.median(seconds), 1),
        "runs_s": [round(s, 1) for s in seconds],
    }


def measure(work: Path, users: int, events: int, rounds: int) -> dict[str, Any]:
    data = work / "data"
    landed = land(data / "landing" / "clickstream", users, events)
    rebuild_env = _env(data, _specs(work, "rocksdb"))
    migrate_env = _env(data, _specs(work, "hdfs"))
    live = [data / "checkpoints" / JOB, data / "tables" / JOB]
    pristine = work / "pristine"
    commands = {
        "rebuild": f"python -m spark_jobs run {JOB}",
        "migrate": f"python -m spark_jobs upgrade migrate {JOB}",
    }
    times: dict[str, list[float]] = {"rebuild": [], "migrate": []}
    out: dict[str, Any] = {"users": users, "events": landed, "rounds": rounds}
    print(f"upgrade migrate bench: {landed:,} events of {users:,} users in {work}", flush=True)
    for r in range(rounds):
        for p in (*live, data / "snapshots"):
            shutil.rmtree(p, ignore_errors=True)
        seconds, _ = _cli(rebuild_env, "run", JOB)
        times["rebuild"].append(seconds)
        print(f"  round {r + 1} rebuild: {seconds:.1f} s", flush=True)
        if r == 0:
            out["events_read"] = events_read(data)
            out["users_in_state_rebuilt"] = users_in_state(rebuild_env)
            for p in live:
                shutil.copytree(p, pristine / p.parent.name, symlinks=True)
        for p in (*live, data / "snapshots"):  # the first rebuild's checkpoint and table, fresh
            shutil.rmtree(p, ignore_errors=True)
            if p in live:
                shutil.copytree(pristine / p.parent.name, p, symlinks=True)
        seconds, said = _cli(migrate_env, "upgrade", "migrate", JOB)
        times["migrate"].append(seconds)
        found = REWRITTEN.search(said)
        if not found:
            raise SystemExit(f"upgrade migrate rewrote no state: {said.strip()}")
        out["state_rows_rewritten"] = int(found.group(1))
        print(f"  round {r + 1} migrate: {seconds:.1f} s ({said.strip()[:160]}...)", flush=True)
        _cli(migrate_env, "upgrade", "plan", JOB)  # exits 0: nothing left to do
        if r == 0:  # the job goes on from the migrated checkpoint: no event read again
            _cli(migrate_env, "run", JOB)
            out["events_read_after_next_run"] = events_read(data)
            out["users_in_state_migrated"] = users_in_state(migrate_env)
    out["rebuild"], out["migrate"] = _summary(times["rebuild"]), _summary(times["migrate"])
    out["ratio_rebuild_vs_migrate"] = round(
        statistics.median(times["rebuild"]) / statistics.median(times["migrate"]), 2
    )
    out["commands"] = commands
    return out


def table(r: dict[str, Any]) -> str:
    return "\n".join(
        [
            "",
            f"== sessions: rebuild the state from its events against upgrade migrate "
            f"(rocksdb -> hdfs), {r['rounds']} interleaved rounds ==",
            f"events landed {r['events']:,}, read by the rebuild {r['events_read']:,}; users "
            f"{r['users']:,}; users in state after rebuild {r['users_in_state_rebuilt']:,}, "
            f"after migrate and a run {r['users_in_state_migrated']:,} "
            f"(in {r['state_rows_rewritten']} state rows: buckets)",
            f"{'':10}{'min s':>10}{'median s':>10}  runs",
            *(
                f"{k:10}{r[k]['min_s']:>10}{r[k]['median_s']:>10}  {r[k]['runs_s']}"
                for k in ("rebuild", "migrate")
            ),
            f"ratio rebuild / migrate (medians): {r['ratio_rebuild_vs_migrate']:.2f}x",
            *(f"{k}: {c}" for k, c in r["commands"].items()),
        ]
    )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench.upgrade_migrate", description=__doc__)
    parser.add_argument(
        "--smoke", action="store_true", help="20k users and one round unless given; -smoke.json"
    )
    parser.add_argument("--users", type=int, help="distinct users (keys); default 1M")
    parser.add_argument("--events", type=int, help="events, at least --users (default +2%%)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds of each (default 2)")
    parser.add_argument("--work", default=None, help="default: a temporary folder")
    args = parser.parse_args(argv)
    args.users = args.users or (20_000 if args.smoke else 1_000_000)
    args.rounds = args.rounds or (1 if args.smoke else 2)
    events = max(args.events or args.users + args.users // 50, args.users)
    with tempfile.TemporaryDirectory(prefix="bench-upgrade-migrate-") as tmp:
        work = Path(args.work) if args.work else Path(tmp)
        if args.work:
            shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True, exist_ok=True)
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        result = {"started": started, **measure(work, args.users, events, args.rounds)}
    print(table(result), flush=True)
    out = ROOT / "bench" / "results" / f"upgrade_migrate{'-smoke' if args.smoke else ''}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"results: {out}", flush=True)
    return result


if __name__ == "__main__":
    main()
    sys.exit(0)
