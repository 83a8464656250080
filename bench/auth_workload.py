"""The auth events fraud detection sees, for the ``fraud_alerts`` benchmarks.

``python -m spark_jobs generate auth`` makes every login a "burst": 8 % are brute-force runs of
3-12 failures and the rest have 0-2 typos before the success, so about 56 % of all events are
failures and nine users in ten fail at some point, all within a few hours. That is a stress
test of the failure path, not what a login service sends. Here, as seen in real login logs:

- almost every event is a successful login (:data:`TYPO_SHARE` of logins come after one or
  two typos), spread over a day, so a user has a handful of events, mostly seconds-apart pairs;
- brute force comes from few sources against few accounts (:data:`VICTIM_SHARE` of the users):
  runs of :data:`ATTACK_RUN` failures a few seconds apart, from one to three IPs, making up
  :data:`ATTACK_SHARE` of the events.

About 8 % of the events are failures, and alerts come from the attacked accounts. Lines are
written as the generator writes them (same JSON fields and time format, 200,000 lines a file,
neighbours swapped 1 time in 10 as real delivery does), deterministic for a seed.
"""

from __future__ import annotations

import json
import random
import shutil
from datetime import datetime, timedelta
from pathlib import Path

from spark_jobs.generate import DEFAULT_START
from spark_jobs.generate_events import ts

SPAN = timedelta(days=1)  # the events' event-time span
TYPO_SHARE = 0.05  # logins with one or two failed attempts before the success
VICTIM_SHARE = 0.002  # users whose accounts are attacked
ATTACK_SHARE = 0.03  # of all events: failures of brute-force runs
ATTACK_RUN = (10, 60)  # failures per brute-force run
LINES_PER_FILE = 200_000


def events(n: int, keys: int, seed: int = 6) -> list[tuple[datetime, str, str, str, str]]:
    """``n`` events of ``keys`` users as (time, event_id, user_id, event_type, ip)."""
    rng = random.Random(f"auth-workload:{seed}")
    victims = [f"u{rng.randrange(keys):06d}" for _ in range(max(1, int(keys * VICTIM_SHARE)))]
    out: list[tuple[datetime, str, str, str, str]] = []

    def add(t: datetime, user: str, etype: str, ip: str) -> None:
        out.append((t, f"{rng.getrandbits(64):016x}", user, etype, ip))

    def ip() -> str:
        return f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"

    attacks = int(n * ATTACK_SHARE)
    while len(out) < attacks:  # brute force: few accounts, many failures seconds apart
        user, t, ips = rng.choice(victims), DEFAULT_START + SPAN * rng.random(), [ip(), ip()]
        for _ in range(min(attacks - len(out), rng.randint(*ATTACK_RUN))):
            add(t, user, "LOGIN_FAILED", rng.choice(ips))
            t += timedelta(seconds=rng.uniform(1, 8))
    while len(out) < n:  # people logging in, now and then after a typo or two
        user, t, home = f"u{rng.randrange(keys):06d}", DEFAULT_START + SPAN * rng.random(), ip()
        typos = rng.choice((1, 1, 2)) if rng.random() < TYPO_SHARE else 0
        for etype in ["LOGIN_FAILED"] * typos + ["LOGIN_SUCCESS"]:
            if len(out) < n:
                add(t, user, etype, home)
                t += timedelta(seconds=rng.uniform(3, 30))
    out.sort()
    for i in range(1, len(out)):  # a little disorder, as in real delivery
        if rng.random() < 0.1:
            out[i - 1], out[i] = out[i], out[i - 1]
    return out


def dataset(root: Path, n: int, keys: int) -> Path:
    """The workload as JSON-lines files under ``root``, made once and reused."""
    folder = root / "data" / f"auth-realistic-{n}-{keys}"
    if (folder / ".complete").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    lines = [
        json.dumps(
            {"event_id": e, "user_id": u, "event_type": k, "ip": i, "event_time": ts(t)},
            separators=(",", ":"),
        )
        for t, e, u, k, i in events(n, keys)
    ]
    for f in range(0, len(lines), LINES_PER_FILE):
        part = folder / f"auth-{f // LINES_PER_FILE:03d}.json"
        part.write_text("\n".join(lines[f : f + LINES_PER_FILE]) + "\n", encoding="utf-8")
    (folder / ".complete").write_text("ok")
    return folder
