"""``python -m bench.upgrade_migrate``: migrate 1M keys of ``sessions`` state against rebuilding
the same state from its events (issue 26), as whole processes, side by side in one run.

It lands ``--events`` clickstream events of ``--users`` distinct users (every user one event,
every 100th the rest) whose event times all fall within 20 minutes of the newest: less than the
30-minute session gap plus the 10-minute watermark delay, so no session closes and every user is
a key in state after the run. Then, interleaved, ``--rounds`` times:

- **rebuild** (what a user must do without ``migrate``): ``python -m spark_jobs run sessions``
  over all those events into a fresh checkpoint and table;
- **migrate** (rocksdb -> hdfs): the checkpoint and table the first rebuild left, restored
  fresh (and the snapshot store emptied), the spec changed from ``state_store: rocksdb`` to
  ``hdfs`` (a change only a state rewrite can make), ``python -m spark_jobs upgrade migrate
  sessions``; its line must say the state was rewritten, and ``upgrade plan`` after it must
  exit 0;
- **migrate_watermark** (unless ``--no-watermark``): the same from a fresh copy, the watermark
  delay changed from 10 to 5 minutes instead (RocksDB kept: the rewrite goes through Spark's
  state rewriter rather than the HDFS-backed store's file).

Each command is timed from its start to its exit. Users in state are counted by ``checkpoint
inspect sessions --rows --json`` after the first rebuild and the first of each migration: the
batched executor keeps ``params.buckets`` state rows, each a bucket of users, and inspect sums
the users the buckets hold; ``migrate`` reports the state rows (buckets) it rewrote. After the
first of each migration, ``run sessions`` goes on from the migrated checkpoint (untimed) before
the count: it must read no event again. Everything lives under a temporary
``STATEKEEPER_DATA``, so the spec's own relative paths are confined there.
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


def _specs(work: Path, name: str, **changes: str) -> Path:
    """A copy of the packaged spec with ``changes``; its relative paths resolve under
    STATEKEEPER_DATA."""
    raw = yaml.safe_load((ROOT / "include" / "jobs" / f"{JOB}.yaml").read_text())
    raw.update(changes)
    folder = work / f"specs-{name}"
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


def timed_cli(env: dict[str, str], *args: str, ok: tuple[int, ...] = (0,)) -> tuple[float, str]:
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
    _, out = timed_cli(env, "checkpoint", "inspect", JOB, "--rows", "--json")
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


# The migrations timed: the spec's change from the packaged one (state_store: rocksdb, watermark:
# 10 minutes), each a change only a state rewrite can make.
MIGRATIONS = {
    "migrate": ("rocksdb -> hdfs", {"state_store": "hdfs"}),
    "migrate_watermark": ("watermark 10 -> 5 minutes", {"watermark": "5 minutes"}),
}


def _restore(data: Path, pristine: Path, live: list[Path]) -> None:
    """The first rebuild's checkpoint and table, fresh; no snapshot taken yet."""
    shutil.rmtree(data / "snapshots", ignore_errors=True)
    for p in live:
        shutil.rmtree(p, ignore_errors=True)
        shutil.copytree(pristine / p.parent.name, p, symlinks=True)


def _migrate(env: dict[str, str], out: dict[str, Any], arm: str) -> float:
    """One timed ``upgrade migrate``; its line must say the state was rewritten, and ``upgrade
    plan`` after it exits 0 (nothing left to do)."""
    seconds, said = timed_cli(env, "upgrade", "migrate", JOB)
    found = REWRITTEN.search(said)
    if not found:
        raise SystemExit(f"upgrade migrate rewrote no state: {said.strip()}")
    out[f"{arm}_state_rows_rewritten"] = int(found.group(1))
    timed_cli(env, "upgrade", "plan", JOB)
    return seconds


def measure(work: Path, users: int, events: int, rounds: int, arms: list[str]) -> dict[str, Any]:
    data = work / "data"
    landed = land(data / "landing" / "clickstream", users, events)
    rebuild_env = _env(data, _specs(work, "v1"))
    envs = {a: _env(data, _specs(work, a, **MIGRATIONS[a][1])) for a in arms}
    live = [data / "checkpoints" / JOB, data / "tables" / JOB]
    pristine = work / "pristine"
    times: dict[str, list[float]] = {a: [] for a in ("rebuild", *arms)}
    out: dict[str, Any] = {"users": users, "events": landed, "rounds": rounds}
    print(f"upgrade migrate bench: {landed:,} events of {users:,} users in {work}", flush=True)
    for r in range(rounds):
        for p in (*live, data / "snapshots"):
            shutil.rmtree(p, ignore_errors=True)
        seconds, _ = timed_cli(rebuild_env, "run", JOB)
        times["rebuild"].append(seconds)
        print(f"  round {r + 1} rebuild: {seconds:.1f} s", flush=True)
        if r == 0:
            out["events_read"] = events_read(data)
            out["users_in_state_rebuilt"] = users_in_state(rebuild_env)
            for p in live:
                shutil.copytree(p, pristine / p.parent.name, symlinks=True)
        for arm in arms:
            _restore(data, pristine, live)
            seconds = _migrate(envs[arm], out, arm)
            times[arm].append(seconds)
            print(f"  round {r + 1} {arm} ({MIGRATIONS[arm][0]}): {seconds:.1f} s", flush=True)
            if r == 0:  # the job goes on from the migrated checkpoint: no event read again
                timed_cli(envs[arm], "run", JOB)
                out[f"{arm}_events_read_after_next_run"] = events_read(data)
                out[f"{arm}_users_in_state"] = users_in_state(envs[arm])
    rebuild = statistics.median(times["rebuild"])
    for name, runs in times.items():
        out[name] = _summary(runs)
        if name != "rebuild":
            out[name]["change"] = MIGRATIONS[name][0]
            out[name]["ratio_rebuild_vs_this"] = round(rebuild / statistics.median(runs), 2)
    out["commands"] = {
        "rebuild": f"python -m spark_jobs run {JOB}",
        "migrate": f"python -m spark_jobs upgrade migrate {JOB}",
    }
    return out


def table(r: dict[str, Any]) -> str:
    arms = [a for a in MIGRATIONS if a in r]
    return "\n".join(
        [
            "",
            f"== sessions: rebuild the state from its events against upgrade migrate, "
            f"{r['rounds']} interleaved round(s) (ratio = rebuild / migrate, medians) ==",
            f"events landed {r['events']:,}, read by the rebuild {r['events_read']:,}; users "
            f"{r['users']:,}, in state after the rebuild {r['users_in_state_rebuilt']:,}",
            *(
                f"{a}: {r[a]['change']}: {r[f'{a}_state_rows_rewritten']} state rows (buckets) "
                f"rewritten; users in state after it and a run {r[f'{a}_users_in_state']:,}, "
                f"events read in all {r[f'{a}_events_read_after_next_run']:,}"
                for a in arms
            ),
            f"{'':20}{'min s':>8}{'median s':>10}{'ratio':>8}  runs",
            *(
                f"{k:20}{r[k]['min_s']:>8}{r[k]['median_s']:>10}"
                f"{r[k].get('ratio_rebuild_vs_this', 1.0):>7.2f}x  {r[k]['runs_s']}"
                for k in ("rebuild", *arms)
            ),
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
    parser.add_argument(
        "--no-watermark", action="store_true", help="time rocksdb -> hdfs only, not the watermark"
    )
    parser.add_argument("--work", default=None, help="default: a temporary folder")
    args = parser.parse_args(argv)
    args.users = args.users or (20_000 if args.smoke else 1_000_000)
    args.rounds = args.rounds or (1 if args.smoke else 2)
    arms = [a for a in MIGRATIONS if not (args.no_watermark and a == "migrate_watermark")]
    events = max(args.events or args.users + args.users // 50, args.users)
    with tempfile.TemporaryDirectory(prefix="bench-upgrade-migrate-") as tmp:
        work = Path(args.work) if args.work else Path(tmp)
        if args.work:
            shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True, exist_ok=True)
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        result = {"started": started, **measure(work, args.users, events, args.rounds, arms)}
    print(table(result), flush=True)
    out = ROOT / "bench" / "results" / f"upgrade_migrate{'-smoke' if args.smoke else ''}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"results: {out}", flush=True)
    return result


if __name__ == "__main__":
    main()
    sys.exit(0)
