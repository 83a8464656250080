"""Event time means event time (docs/contracts.md §3): for all seven jobs, the same events (bad
lines, duplicates and hopelessly late events included), each followed by the late events and a
flush far ahead, give identical output and quarantine tables, row for row, delivered

  (b) in two arrivals of three files each, overlapping by less than the watermark delay, lines
      shuffled inside files: one run per arrival, each arrival one batch; the second run then
      takes the late events and the flush in a batch of their own (state and watermark carried
      across runs, late events in a batch after the watermark moved);
  (a) in one arrival, as a backfill of (b)'s input on a new checkpoint: (b)'s six arrival files
      (the same files, hard-linked) in one batch, every event at once; then (b)'s late and
      flush files in a second run; published "replace" into (b)'s live table, which it must
      leave as it was (the backfill test);
  (c) cut differently, one file per batch: the first four files in a child process killed
      (SIGKILL) once some jobs have committed a batch of it, on a new checkpoint (so a job may
      be cut inside its batch 0, or after it with state and a watermark); then one run that
      finishes the killed batches from the checkpoint and goes on with the last two files, the
      late events and the flush, each in a batch of its own (a crash, recovery, and late events
      in a batch after the watermark moved).

For ``sessions`` and ``fraud_alerts`` they also equal a pure-Python reference of the contract's
rule over the admitted events. One module fixture does every run of the seven jobs (four at a
time on the shared session); the tests assert on its outcome."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from invariance import JOBS, Landing, cut, event_time, extras, pool, run_all
from jobkit import parquet_timestamp_types, rows

from spark_jobs.contract.backfill import refusal
from spark_jobs.contract.spec import load_spec
from spark_jobs.publish import publish_rows

# The harness is one module-scoped fixture: five runs of seven jobs and a killed child process.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(3000)]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SCENARIOS = ("a", "b", "c")


def _commits(root: Path) -> int:
    d = root / "ckpt" / "commits"
    return len([p for p in d.iterdir() if p.name.isdigit()]) if d.exists() else 0


def _kill_mid_run(plan: list[tuple[str, Path]], plan_file: Path) -> dict[str, int]:
    """Run ``plan`` in a child process and SIGKILL its whole group once some jobs have
    committed a batch of this run but not all of them have finished. Returns new commits per
    job at the kill."""
    plan_file.write_text(json.dumps([(j, str(r)) for j, r in plan]))
    before = {j: _commits(r) for j, r in plan}
    env = {**os.environ, "PYTHONPATH": f"{HERE}:{ROOT}"}
    child = subprocess.Popen(
        [sys.executable, "-m", "invariance", str(plan_file)],
        cwd=HERE,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 600
    try:
        while time.time() < deadline and child.poll() is None:
            moved = {j: _commits(r) - before[j] for j, r in plan}
            if sum(1 for n in moved.values() if n) >= 3:
                break
            time.sleep(0.1)
        assert child.poll() is None, "the child finished before it could be killed mid-run"
        os.killpg(child.pid, signal.SIGKILL)
        child.wait(30)
        return {j: _commits(r) - before[j] for j, r in plan}
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def outcome(spark, tmp_path_factory):
    base = tmp_path_factory.mktemp("invariance")
    rng = random.Random(20261123)
    data = {}
    for i, job in enumerate(JOBS):
        lines = pool(base / "pool" / job, job, seed=100 + i)
        late, flush = extras(lines)
        delay = timedelta(seconds=load_spec(job).watermark_seconds)
        data[job] = (lines, late, flush, delay)
    land = {(s, j): Landing(base / s / j) for s in SCENARIOS for j in JOBS}

    # Files per batch differ between the scenarios too: (b) takes an arrival's three files (or the
    # late and the flush file) in one batch, (a) six then two, (c) one file per batch.
    def step(scenario: str, chunks: dict[str, list[dict]], per_batch: int = 3) -> None:
        for job, cs in chunks.items():
            for c in cs:
                land[scenario, job].land(c)
        run_all([(j, land[scenario, j].root) for j in JOBS], spark, per_batch)

    tail = {j: [data[j][1], data[j][2]] for j in JOBS}  # the late events, then the flush
    tables = {}

    def collect(scenario: str) -> None:
        for j in JOBS:
            out = land[scenario, j].root / "out"
            q = spark.read.format("delta").load(str(out / "_quarantine"))
            tables[scenario, j] = (
                rows(spark, str(out)),
                Counter((r.raw_line, r.reason) for r in q.select("raw_line", "reason").collect()),
            )

    # (b) two arrivals of three files each, a run each; the second run's second batch is the tail
    b = {j: cut(data[j][0], 6, data[j][3] / 2, rng) for j in JOBS}
    step("b", {j: b[j][0:3] for j in JOBS})
    step("b", {j: [*b[j][3:6], *tail[j]] for j in JOBS})
    collect("b")  # the live runs' own tables, before anything is published into them
    live_before = {j: tables["b", j][0] for j in JOBS}

    # (a) one arrival, as a backfill of (b)'s input on a new checkpoint: (b)'s six arrival files
    # (hard links: the same files) in one batch, then its late and flush files in a second run
    # (a batch whose watermark has moved: in a query's second batch Spark still admits every
    # event, the first batch's watermark being none); then published "replace" into (b)
    def link(files: slice) -> None:
        for j in JOBS:
            for kind in (land["b", j].root / "land").iterdir():
                to = land["a", j].root / "land" / kind.name
                to.mkdir(parents=True, exist_ok=True)
                for f in sorted(kind.glob("part-*.json"))[files]:
                    os.link(f, to / f.name)
        run_all([(j, land["a", j].root) for j in JOBS], spark, files_per_batch=6)

    link(slice(0, 6))
    link(slice(6, 8))
    collect("a")
    for j in JOBS:
        if refusal(j, "replace") is None:
            publish_rows(
                spark,
                j,
                str(land["a", j].root / "out"),
                str(land["b", j].root / "out"),
                "replace",
                f"invariance-{j}",
            )
    # (c) cut differently, one file per batch; the first run, of the first four files, is killed
    # mid-run, then run again with the last two and the tail landed meanwhile
    c = {j: cut(data[j][0], 6, data[j][3] / 2, rng) for j in JOBS}
    for j in JOBS:
        for chunk in c[j][0:4]:
            land["c", j].land(chunk)
    killed_at = _kill_mid_run([(j, land["c", j].root) for j in JOBS], base / "plan.json")
    step("c", {j: [*c[j][4:6], *tail[j]] for j in JOBS}, 1)
    collect("c")

    backfill = {
        j: (tables["a", j][0], live_before[j], rows(spark, str(land["b", j].root / "out")))
        for j in JOBS
    }
    roots = {key: landing.root for key, landing in land.items()}
    return {
        "tables": tables,
        "data": data,
        "killed_at": killed_at,
        "backfill": backfill,
        "roots": roots,
    }


@pytest.mark.parametrize("job", JOBS)
def test_same_tables_however_the_events_were_split(outcome, job):
    (out_a, q_a), (out_b, q_b), (out_c, q_c) = (outcome["tables"][s, job] for s in SCENARIOS)
    assert out_a, f"{job} wrote nothing: the comparison would prove nothing"
    assert sum(q_a.values()) > 0, "no bad line was quarantined: the generator's bad lines are gone"
    assert out_b == out_a, f"{job}: two arrivals differ from one"
    assert out_c == out_a, f"{job}: a killed and repeated run differs from one arrival"
    assert q_b == q_a and q_c == q_a, f"{job}: quarantine differs"


@pytest.mark.parametrize("job", JOBS)
def test_a_backfill_of_the_same_input_publishes_the_live_rows(outcome, job):
    """docs/contracts.md §3: a backfill over the same input gives the rows the live runs gave;
    published with "replace" (refused for user_counts' lifetime totals) it leaves the live table as
    it was."""
    staged, live_before, live_after = outcome["backfill"][job]
    assert staged and staged == live_before, (
        f"{job}: the backfill's rows differ from the live runs'"
    )
    assert live_after == live_before, f"{job}: publishing the same rows changed the live table"


@pytest.mark.parametrize("job", JOBS)
def test_delta_rs_reads_every_table_as_spark_does(outcome, job):
    """Another reader (delta-rs, no JVM) reads each job's output and quarantine tables with the
    rows Spark reads, and their timestamps are INT64 micros (TIMESTAMP_MICROS), never INT96."""
    from deltalake import DeltaTable

    out_rows, quarantined = outcome["tables"]["a", job]
    out = outcome["roots"]["a", job] / "out"
    for table, n in ((out, len(out_rows)), (out / "_quarantine", sum(quarantined.values()))):
        assert n > 0, f"{table} is empty: the comparison would prove nothing"
        assert parquet_timestamp_types(table) == {"INT64"}, table
        assert DeltaTable(str(table)).to_pyarrow_table().num_rows == n, table


def test_the_kill_landed_mid_run(outcome):
    moved = outcome["killed_at"]
    assert any(moved.values()), f"no job had committed a batch of the killed run: {moved}"


def _admitted(job: str, outcome: dict) -> list[dict]:
    """Every event of the pool that is neither a bad line nor late: what the watermark admits."""
    lines, _late, _flush, _ = outcome["data"][job]
    bad = {raw for raw, _ in outcome["tables"]["a", job][1]}
    kind = load_spec(job).kinds[0]
    return [json.loads(ln) for ln in lines[kind] if ln not in bad and event_time(ln) is not None]


def _ms(e: dict) -> int:
    t = datetime.fromisoformat(e["event_time"].replace("Z", "+00:00"))
    return round(t.timestamp() * 1000)


def test_fraud_alerts_equal_the_rule_over_admitted_events(outcome):
    """docs/contracts.md §3: failures count per user, a success resets, a gap over 10 minutes
    resets, the 5th counted failure alerts and resets; in (time, event_id) order."""
    gap = 10 * 60_000
    by_user: dict[str, list] = {}
    for e in _admitted("fraud_alerts", outcome):
        by_user.setdefault(e["user_id"], []).append(
            (_ms(e), e["event_id"], e["event_type"], e["ip"])
        )
    expected = []
    for user, evs in by_user.items():
        count, first, last, ips = 0, 0, 0, set()
        for t, _eid, kind, ip in sorted(evs, key=lambda e: (e[0], e[1])):
            if kind == "LOGIN_SUCCESS":
                count, ips = 0, set()
                continue
            if count and t - last > gap:
                count, ips = 0, set()
            if not count:
                first = t
            count, last = count + 1, t
            ips.add(ip)
            if count == 5:
                expected.append((user, t, first, 5, len(ips)))
                count, ips = 0, set()
    got = [
        (r[0], int(_utc_ms(r[1])), int(_utc_ms(r[2])), r[3], r[4])
        for r in outcome["tables"]["a", "fraud_alerts"][0]
        if r[0] != "flush"
    ]
    assert expected and sorted(got) == sorted(expected)


def _utc_ms(t: datetime) -> int:
    """Spark returns naive UTC datetimes (session time zone UTC)."""
    from datetime import UTC

    return round(t.replace(tzinfo=UTC).timestamp() * 1000)


def test_sessions_equal_the_rule_over_admitted_events(outcome):
    """docs/contracts.md §3: a session is a maximal run of a user's events each at most 30 minutes
    after the previous one; last_pages are its last 10 page views' pages, oldest first."""
    gap = 30 * 60_000
    by_user: dict[str, list] = {}
    for e in _admitted("sessions", outcome):
        by_user.setdefault(e["user_id"], []).append(e)
    expected = []
    for user, evs in by_user.items():
        evs.sort(key=lambda e: (_ms(e), e["event_id"]))
        runs: list[list[dict]] = []
        for e in evs:
            if runs and _ms(e) - _ms(runs[-1][-1]) <= gap:
                runs[-1].append(e)
            else:
                runs.append([e])
        for r in runs:
            start = _ms(r[0])
            pv = [e for e in r if e["event_type"] == "page_view"]
            pages = sorted((_ms(e), e["event_id"], e["page"]) for e in pv if e["page"] is not None)
            expected.append(
                (
                    user,
                    hashlib.sha1(f"{user}|{start}".encode()).hexdigest()[:20],
                    start,
                    _ms(r[-1]),
                    len(r),
                    len(pv),
                    sum(e.get("duration_sec") or 0 for e in r),
                    [p for _, _, p in pages[-10:]],
                    any(e["event_type"] == "purchase" for e in r),
                    any(e["event_type"] == "checkout" for e in r),
                )
            )
    got = [
        (r[0], r[1], _utc_ms(r[2]), _utc_ms(r[3]), r[4], r[5], r[6], list(r[7]), r[8], r[9])
        for r in outcome["tables"]["a", "sessions"][0]
        if r[0] != "flush"
    ]
    assert expected and sorted(got) == sorted(expected)
