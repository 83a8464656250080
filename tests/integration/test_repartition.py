"""``checkpoint repartition``: a job's state rescaled between runs gives the same tables as a job
that never changed partitions, for every job (2 -> 4, then 4 -> 1 on the same checkpoint);
``checkpoint inspect`` shows the count, per operator too; a refused or failed repartition leaves
the checkpoint byte for byte as it was.

The seven round trips run side by side in one module fixture (as the batching-invariance
harness does); each job's test then asserts on its outcome."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from invariance import JOBS, event_time, iso
from jobkit import job_spec

from spark_jobs.checkpoints.inspect import inspect_checkpoint, render
from spark_jobs.checkpoints.manifests import list_snapshots
from spark_jobs.checkpoints.repartition import repartition
from spark_jobs.checkpoints.roots import resolve
from spark_jobs.contract import delta
from spark_jobs.contract.errors import UserError
from spark_jobs.contract.spec import load_spec
from spark_jobs.generate import generate
from spark_jobs.jobs.runner import run_job

pytestmark = pytest.mark.integration

EVENTS = 200  # per kind and arrival: a few batches' worth of state, seconds per run
KEYS = {"service-logs": 6, "auth": 15}
# Small counts: every state partition costs each batch a task and a store commit, and the runs
# around the rescales are most of this file's time; 1 is the edge of a scale-down.
START, UP, DOWN = 2, 4, 1
# The column that says a row began before a cut in event time: such a row written after a
# rescale was held in state across it.
STARTS = {
    "sessions": "session_start",
    "fraud_alerts": "first_failure_time",
    "windowed_counts": "window_start",
    "order_payments": "order_time",
}


@pytest.fixture(autouse=True)
def _roots(monkeypatch, tmp_path):
    monkeypatch.setenv("STATEKEEPER_CHECKPOINT_ROOTS", str(tmp_path))
    monkeypatch.setenv("STATEKEEPER_SNAPSHOT_ROOTS", str(tmp_path))


def arrive(root: Path, job: str, n: int, before: list[str]) -> list[str]:
    """Arrival ``n`` of ``job``'s input; returns the lines of its first kind (the one that keys
    it), :func:`again`'s included. ``before`` is the previous arrival's."""
    kinds = load_spec(job).kinds
    landed: dict[str, list[str]] = {}
    for kind in kinds:
        rep = generate(
            kind, str(root / "land" / kind), EVENTS, keys=KEYS.get(kind, 25), seed=40 + n
        )
        landed[kind] = [ln for f in rep.files for ln in Path(f).read_text().splitlines()]
    extra = again(job, n, landed[kinds[0]], before)
    if extra:
        (root / "land" / kinds[0] / f"again-{n}.json").write_text("\n".join(extra) + "\n")
    return landed[kinds[0]] + extra


def again(job: str, n: int, own: list[str], before: list[str]) -> list[str]:
    """Events that make state matter across the rescales, for jobs whose generated input rarely
    does, all within the watermark so only the state can tell:

    - dedup_events: the previous arrival's five latest events come again;
    - fraud_alerts: a burst of five failed logins straddles each rescale (three at the end of
      arrivals 2 and 3, two just after in the next), so an alert needs the count kept across it.
    """
    if job == "dedup_events" and before:
        return sorted(before, key=lambda ln: _time(ln))[-5:]
    if job != "fraud_alerts":
        return []
    out = []
    for side, lines, offsets in (("after", before, (30, 60)), ("before", own, (-90, -60, -30))):
        if 2 <= (n if side == "before" else n - 1) <= 3:
            last = max(_time(ln) for ln in lines)
            out += [
                json.dumps(
                    {
                        "event_id": f"span-{n}-{side}-{i}",
                        "user_id": "u-span",
                        "event_type": "LOGIN_FAILED",
                        "ip": "10.0.0.1",
                        "event_time": iso(last + timedelta(seconds=s)),
                    }
                )
                for i, s in enumerate(offsets)
            ]
    return out


def _time(line: str) -> datetime:
    return event_time(line) or datetime.min.replace(tzinfo=UTC)


def rescale(spark: Any, root: Path, job: str, n: int) -> dict:
    target = resolve(job, str(root / "ckpt"), str(root / "snaps"))
    return repartition(target, n, spark=spark)


@dataclass
class Trip:
    """One job's round trip: ``moved`` is rescaled between runs, ``stayed`` never is."""

    job: str
    moved: Path
    stayed: Path
    error: str | None = None
    lines: list[list[str]] = field(default_factory=list)  # per arrival
    version_before: list[int | None] = field(default_factory=list)  # moved table, per rescale
    rescales: list[dict] = field(default_factory=list)
    inspected: list[dict] = field(default_factory=list)  # right after each rescale
    rendered: list[str] = field(default_factory=list)
    snapshots: list[list[str]] = field(default_factory=list)
    partitions_after_run: int | None = None  # the run between the rescales

    def step(self, what: Any, spark: Any) -> None:
        if self.error is None:
            try:
                what(self, spark)
            except BaseException:  # the job's test reports it; the other jobs go on
                self.error = traceback.format_exc()


def _first_runs(t: Trip, spark: Any) -> None:
    """The moved job's first two arrivals in one run; then the reference: all four arrivals in
    one run (the same as four: test_restart_and_records). One after the other: the query is
    named after the job, and a session runs one query of a name at a time."""
    for n in (1, 2):
        t.lines.append(arrive(t.moved, t.job, n, t.lines[-1] if t.lines else []))
    run_job(job_spec(t.job, t.moved, shuffle_partitions=START), spark=spark)
    t.version_before.append(delta.version(str(t.moved / "out")))
    before: list[str] = []
    for n in (1, 2, 3, 4):
        before = arrive(t.stayed, t.job, n, before)
    run_job(job_spec(t.job, t.stayed, shuffle_partitions=START), spark=spark)


def _rescale(to: int) -> Any:
    def go(t: Trip, spark: Any) -> None:
        t.rescales.append(rescale(spark, t.moved, t.job, to))
        info = inspect_checkpoint(str(t.moved / "ckpt"))
        t.inspected.append(info)
        t.rendered.append(render(info))
        t.snapshots.append([s["id"] for s in list_snapshots(str(t.moved / "snaps"))])

    return go


def _arrive_and_run(n: int) -> Any:
    def go(t: Trip, spark: Any) -> None:
        t.lines.append(arrive(t.moved, t.job, n, t.lines[-1]))
        # The unchanged spec (START): the run adopts the checkpoint's count
        run_job(job_spec(t.job, t.moved, shuffle_partitions=START), spark=spark)
        if n == 3:
            t.partitions_after_run = _pinned(inspect_checkpoint(str(t.moved / "ckpt")))
            t.version_before.append(delta.version(str(t.moved / "out")))

    return go


def _pinned(info: dict) -> int:
    return int(info["pinned_conf"]["spark.sql.shuffle.partitions"])


@pytest.fixture(scope="module")
def trips(spark, tmp_path_factory) -> dict[str, Trip]:
    """Every job's round trip, side by side: two arrivals at START partitions, a repartition to
    UP, a third arrival, UP -> DOWN, a fourth; and the reference that stays at START. The phases
    run a few jobs at a time and wait for each other: a new checkpoint pins the session's shuffle
    partitions, which every run and rescale sets, so the references start where only START is
    set."""
    root = tmp_path_factory.mktemp("repartition")
    out = {j: Trip(j, root / j / "moved", root / j / "stayed") for j in JOBS}
    phases = [
        ("first runs and references", [(t, _first_runs) for t in out.values()]),
        (f"{START} -> {UP}", [(t, _rescale(UP)) for t in out.values()]),
        ("third arrival", [(t, _arrive_and_run(3)) for t in out.values()]),
        (f"{UP} -> {DOWN}", [(t, _rescale(DOWN)) for t in out.values()]),
        ("fourth arrival", [(t, _arrive_and_run(4)) for t in out.values()]),
    ]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("STATEKEEPER_CHECKPOINT_ROOTS", str(root))
        mp.setenv("STATEKEEPER_SNAPSHOT_ROOTS", str(root))
        for name, work in phases:
            started = time.perf_counter()
            with ThreadPoolExecutor(max_workers=4) as pool:
                for f in [pool.submit(t.step, step, spark) for t, step in work]:
                    f.result()
            print(f"repartition round trips: {name} {time.perf_counter() - started:.1f}s")
    return out


def table(uri: Path, version: int | None = None) -> list[dict]:
    from deltalake import DeltaTable

    rows = DeltaTable(str(uri), version=version).to_pyarrow_table().to_pylist()
    return sorted(rows, key=lambda r: [repr(v) for v in r.values()])


def _key(r: dict) -> tuple:
    return tuple(repr(v) for v in r.values())


def crossed(t: Trip, k: int, final: list[dict]) -> list[dict]:
    """Rows whose state was carried across rescale ``k`` (0: up, 1: down)."""
    before, after = t.lines[: k + 2], t.lines[k + 2 :]
    if t.job == "dedup_events":  # an event landed on both sides and was written once
        ids = [
            {json.loads(ln).get("event_id") for a in side for ln in a if event_time(ln)}
            for side in (before, after)
        ]
        return [r for r in final if r["event_id"] in ids[0] & ids[1]]
    written = {_key(r) for r in table(t.moved / "out", t.version_before[k])}
    new = [r for r in final if _key(r) not in written]
    if t.job == "service_health":  # a service's first alert after it is "ok": it knew "stale"
        first = {}
        for r in sorted(new, key=lambda r: r["alert_time"]):
            first.setdefault(r["service"], r)
        return [r for r in first.values() if r["status"] == "ok"]
    cut = min(e for ln in after[0] if (e := event_time(ln)))
    return [r for r in new if r[STARTS[t.job]] < cut]


def state_rows(spark: Any, ck: Path) -> list[tuple]:
    df = spark.read.format("statestore").load(str(ck))
    return sorted(tuple(r) for r in df.selectExpr("key.*", "value.*").collect())


@pytest.mark.parametrize("job", JOBS)
def test_repartitioned_state_gives_the_tables_of_a_job_that_never_changed(spark, trips, job):
    t = trips[job]
    assert t.error is None, t.error
    up, down = t.rescales
    assert (up["from"], up["to"], down["from"], down["to"]) == (START, UP, UP, DOWN)
    for n, info, text in zip((UP, DOWN), t.inspected, t.rendered, strict=True):
        # inspect shows the count: pinned, and per operator (every store of a join included)
        assert _pinned(info) == n
        assert f"pinned       shuffle.partitions = {n}\n" in text, text
        assert info["operators"] and all(op["partitions"] == n for op in info["operators"]), info
        ops = [ln for ln in text.splitlines() if ln.startswith("operator ")]
        assert ops and all(f" {n} partitions," in ln for ln in ops), text
    # a snapshot before each rescale (newest first)
    assert t.snapshots[-1] == [r["snapshot"] for r in reversed(t.rescales)]
    assert t.partitions_after_run == UP, "a run of the unchanged spec did not keep the new count"

    expected = table(t.stayed / "out")
    assert expected, "the reference run wrote nothing: the comparison would prove nothing"
    final = table(t.moved / "out")
    assert final == expected
    if job == "user_counts":
        # Its rows carry each batch's increments, which the upsert adds up: a key that lost its
        # state would still sum to the right total. Its state must be the reference's.
        users = [
            {json.loads(ln)["user_id"] for a in side for ln in a if event_time(ln)}
            for side in (t.lines[:2], t.lines[2:])
        ]
        assert users[0] & users[1], "no user has events on both sides of the rescales"
        moved = state_rows(spark, t.moved / "ckpt")
        assert moved and moved == state_rows(spark, t.stayed / "ckpt")
    else:
        for k in (0, 1):
            assert crossed(t, k, final), f"no row of {job} carried state across rescale {k + 1}"


def _digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != "lock"
    }


def test_refusals_and_a_failed_repartition_leave_the_checkpoint_as_it_was(
    spark, tmp_path, monkeypatch
):
    from spark_jobs.checkpoints import repartition as R

    job = "windowed_counts"
    arrive(tmp_path, job, 1, [])
    run_job(job_spec(job, tmp_path, shuffle_partitions=4), spark=spark)
    ck = tmp_path / "ckpt"
    before = _digest(ck)
    with pytest.raises(UserError, match="already has 4 partitions"):
        rescale(spark, tmp_path, job, 4)
    with pytest.raises(UserError, match="at least 1"):
        rescale(spark, tmp_path, job, 0)
    supported = R.SUPPORTED
    monkeypatch.setattr(R, "SUPPORTED", supported - {"stateStoreSave"})
    with pytest.raises(UserError, match="operator 0 is stateStoreSave"):
        rescale(spark, tmp_path, job, 8)
    monkeypatch.setattr(R, "SUPPORTED", supported)

    # Spark's repartition ran, then the result failed validation: the untouched copy goes back.
    def broken(ck_path: Path, n: int) -> None:
        (ck_path / "offsets" / "999").write_text("not an offset file")

    monkeypatch.setattr(R, "_drop_partitions_above", broken)
    with pytest.raises(UserError, match="does not validate"):
        rescale(spark, tmp_path, job, 8)
    assert _digest(ck) == before
    assert not list(tmp_path.glob(".ckpt.*")), "the undo copy was left behind"


def test_a_killed_repartition_is_finished_by_running_the_same_command_again(spark, tmp_path):
    """SIGKILL ``checkpoint repartition`` at its riskiest moment: Spark has rewritten the state
    and its offset log into UP partitions, the binding still says START. The next run refuses it
    with the way out; the same command again puts the checkpoint back as it was and repartitions
    it; runs then go on and the table equals a job's that never changed partitions."""
    from spark_jobs.checkpoints.repartition import PAUSE_ENV

    job, moved, stayed = "windowed_counts", tmp_path / "moved", tmp_path / "stayed"
    first = arrive(moved, job, 1, [])
    run_job(job_spec(job, moved, shuffle_partitions=START), spark=spark)
    ck, err = moved / "ckpt", tmp_path / "repartition.err"
    command = [
        sys.executable,
        "-m",
        "spark_jobs",
        "checkpoint",
        "repartition",
        job,
        "--partitions",
        str(UP),
        "--checkpoint",
        str(ck),
        "--snapshot-root",
        str(moved / "snaps"),
    ]
    root = Path(__file__).resolve().parents[2]
    with err.open("w") as fh:
        victim = subprocess.Popen(
            command,
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(root), PAUSE_ENV: "after-spark"},
            stdout=subprocess.DEVNULL,
            stderr=fh,
            start_new_session=True,
        )
    deadline = time.time() + 600
    while "paused at after-spark" not in err.read_text() and victim.poll() is None:
        assert time.time() < deadline, "the repartition never reached its pause"
        time.sleep(0.1)
    assert victim.poll() is None, f"the repartition ended on its own: {err.read_text()[-800:]}"
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()
    assert _pinned(inspect_checkpoint(str(ck))) == UP  # killed with the state rewritten

    with pytest.raises(UserError, match="repartition .* again") as refused:
        run_job(job_spec(job, moved, shuffle_partitions=START), spark=spark)
    assert refused.value.exit_code == 4
    done = rescale(spark, moved, job, UP)  # the same command again (as the CLI calls it)
    assert (done["from"], done["to"]) == (START, UP) and ".ckpt.before-repartition-" in done[
        "undone"
    ]
    assert not list(moved.glob(".ckpt.*")), "a copy was left behind"

    arrive(moved, job, 2, first)
    run_job(job_spec(job, moved, shuffle_partitions=START), spark=spark)
    assert _pinned(inspect_checkpoint(str(ck))) == UP
    arrive(stayed, job, 2, arrive(stayed, job, 1, []))
    run_job(job_spec(job, stayed, shuffle_partitions=START), spark=spark)
    expected = table(stayed / "out")
    assert expected and table(moved / "out") == expected
