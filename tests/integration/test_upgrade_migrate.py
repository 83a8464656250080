"""``upgrade migrate`` rewriting state (real Spark, Delta, RocksDB and HDFS-backed stores), one
``user_counts`` checkpoint through two migrations:

1. v1 runs on RocksDB (arrival 1); the spec moves it to the HDFS-backed store and a 5-minute
   watermark. ``plan`` says ``migrate`` for both; ``run`` refuses; a SIGKILL of ``upgrade
   migrate`` after Spark rewrote the state (before the swap) leaves the live checkpoint byte for
   byte as it was; the same command again clears the killed one's folder and migrates. The next
   run (arrival 2) reads only the new file and the totals hold every event once.
2. v2 of the code (tests/integration/jobs_v2/user_counts_v2.py, deployed through
   STATEKEEPER_JOB_MODULES) keeps page_views in state and writes it; the spec goes back to
   RocksDB. ``plan`` calls the new state field, the new column and the store ``migrate``;
   ``migrate --with`` fills each key's page views from its v1 totals (a bad ``--with`` is one
   line first); the next run (arrival 3) gives every user's page views over all three arrivals.

One shared run of each step (module fixture); the tests assert on its outcome."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml
from jobkit import at, cli, rows, ts, upgrade_env, write_lines

from spark_jobs.contract import paths
from spark_jobs.contract.errors import ExitCode, UserError
from spark_jobs.contract.spec import load_spec
from spark_jobs.jobs import EXTRA_MODULES_ENV
from spark_jobs.jobs.runner import run_job
from spark_jobs.upgrade.migrate import PAUSE_ENV

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
V2 = Path(__file__).parent / "jobs_v2"


def click(eid: str, user: str, minute: float, etype: str) -> dict:
    return {
        "event_id": eid,
        "user_id": user,
        "event_type": etype,
        "page": "/p",
        "event_time": at(minute),
    }


def arrival(tag: str, start: int, n: int, users: int, every: int) -> list[dict]:
    """``n`` events a minute apart from ``start``, users in turn, every ``every``-th a purchase."""
    return [
        click(
            f"{tag}{i}", f"u{i % users}", start + i, "purchase" if i % every == 0 else "page_view"
        )
        for i in range(n)
    ]


ARRIVALS = [arrival("a", 0, 12, 3, 4), arrival("b", 30, 9, 4, 3), arrival("c", 60, 7, 5, 2)]


def expected(events: list[dict], page_views: bool = False) -> list[tuple]:
    """Totals per user over ``events``, by the rule (one row per user, every event once)."""
    total, bought, views, last = Counter(), Counter(), Counter(), {}
    for e in events:
        u = e["user_id"]
        total[u] += 1
        bought[u] += e["event_type"] == "purchase"
        views[u] += e["event_type"] == "page_view"
        last[u] = max(last.get(u, ts(0)), ts(_minute(e)))
    out = [(u, total[u], bought[u], last[u]) for u in total]
    return sorted((*r, views[r[0]]) if page_views else r for r in out)


def _minute(e: dict) -> float:
    from datetime import datetime

    t = datetime.fromisoformat(e["event_time"].replace("Z", "+00:00"))
    return (t - datetime.fromisoformat(at(0).replace("Z", "+00:00"))).total_seconds() / 60


def write_spec(specs: Path, tmp: Path, store: str, watermark: str) -> None:
    raw = yaml.safe_load(
        (paths.project_root() / "include" / "jobs" / "user_counts.yaml").read_text()
    )
    raw.update(
        inputs={"clickstream": str(tmp / "land" / "clickstream")},
        output=str(tmp / "out"),
        checkpoint=str(tmp / "ckpt" / "user_counts"),
        shuffle_partitions=2,
        state_store=store,
        watermark=watermark,
    )
    specs.mkdir(exist_ok=True)
    (specs / "user_counts.yaml").write_text(yaml.safe_dump(raw))


def hashes(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` but the lock file (its holder's record), by content."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != "lock"
    }


def kill_migrate_at(step: str, err: Path) -> None:
    """``upgrade migrate user_counts`` as its own process, SIGKILLed when it reaches ``step``."""
    with err.open("w") as fh:
        victim = subprocess.Popen(
            [sys.executable, "-m", "spark_jobs", "upgrade", "migrate", "user_counts"],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), PAUSE_ENV: step},
            stdout=subprocess.DEVNULL,
            stderr=fh,
            start_new_session=True,
        )
    deadline = time.time() + 600
    while f"paused at {step}" not in err.read_text() and victim.poll() is None:
        assert time.time() < deadline, "the migration never reached its pause"
        time.sleep(0.2)
    assert victim.poll() is None, f"the migration ended on its own: {err.read_text()[-800:]}"
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()


def _batch(ck: Path, b: int) -> dict:
    return {
        "offsets": (ck / "offsets" / str(b)).read_text().split("\n"),
        "commit": json.loads((ck / "commits" / str(b)).read_text().split("\n")[1]),
    }


@pytest.fixture(scope="module")
def outcome(spark, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("upgrade_migrate")
    specs, ck, land = tmp / "specs", tmp / "ckpt" / "user_counts", tmp / "land" / "clickstream"
    mp = pytest.MonkeyPatch()
    upgrade_env(mp, tmp)
    got: dict = {}
    try:
        # 1. v1 on RocksDB, then the HDFS-backed store and a 5-minute watermark
        write_spec(specs, tmp, "rocksdb", "10 minutes")
        write_lines(land, "a1.json", ARRIVALS[0])
        run_job(load_spec("user_counts"), spark=spark)
        write_spec(specs, tmp, "hdfs", "5 minutes")
        got["plan1"] = cli("upgrade", "plan", "user_counts")
        write_lines(land, "a2.json", ARRIVALS[1])
        with pytest.raises(UserError) as refused:
            run_job(load_spec("user_counts"), spark=spark)
        got["refused"] = refused.value
        got["before_kill"] = hashes(ck)
        kill_migrate_at("rewritten", tmp / "migrate.err")
        got["after_kill"] = hashes(ck)
        got["left_by_kill"] = sorted(p.name for p in ck.parent.iterdir())
        got["migrate1"] = cli("upgrade", "migrate", "user_counts")
        got["left_after"] = sorted(p.name for p in ck.parent.iterdir())
        got["batch0"], got["batch1"] = _batch(ck, 0), _batch(ck, 1)
        got["plan1_after"] = cli("upgrade", "plan", "user_counts")
        got["run2"] = run_job(load_spec("user_counts"), spark=spark)
        got["rows2"] = rows(spark, str(tmp / "out"))
        got["files2"] = sorted(p.name for p in (ck / "state" / "0" / "0").iterdir())

        # 2. v2 of the code, back on RocksDB
        mp.syspath_prepend(str(V2))
        mp.setenv(EXTRA_MODULES_ENV, "user_counts_v2")
        write_spec(specs, tmp, "rocksdb", "5 minutes")
        got["plan2"] = cli("upgrade", "plan", "user_counts")
        got["bad_with"] = cli("upgrade", "migrate", "user_counts", "--with", "nowhere:fn")
        got["migrate2"] = cli(
            "upgrade", "migrate", "user_counts", "--with", "user_counts_v2:page_views_from_totals"
        )
        got["plan2_after"] = cli("upgrade", "plan", "user_counts")
        got["binding"] = json.loads((ck / "_statekeeper" / "job.json").read_text())
        write_lines(land, "a3.json", ARRIVALS[2])
        got["run3"] = run_job(load_spec("user_counts"), spark=spark)
        got["rows3"] = rows(spark, str(tmp / "out"))
        got["files3"] = sorted(p.name for p in (ck / "state" / "0" / "0").iterdir())
        yield got
    finally:
        mp.undo()


def test_plan_says_migrate_for_the_store_and_the_watermark_and_run_refuses(outcome):
    code, out, _ = outcome["plan1"]
    assert code == ExitCode.UPGRADE_MIGRATE
    assert "migrate      state_store: 'rocksdb' -> 'hdfs'" in out
    assert "migrate      watermark_seconds: 600.0 -> 300.0" in out
    assert "upgrade migrate JOB" in str(outcome["refused"])


def test_a_kill_mid_migrate_leaves_the_checkpoint_as_it_was_and_a_rerun_finishes(outcome):
    assert outcome["after_kill"] == outcome["before_kill"]  # the live checkpoint: untouched
    killed = [n for n in outcome["left_by_kill"] if n != "user_counts"]
    assert len(killed) == 1 and killed[0].startswith(".user_counts.migrate-")
    code, out, err = outcome["migrate1"]
    assert code == 0, err
    assert "state rewritten (3 keys, rule: same rows) as batch 1" in out
    assert outcome["left_after"] == ["user_counts"]  # the killed one's folder cleared
    assert outcome["plan1_after"][0] == 0


def test_the_extra_batch_reads_nothing_and_carries_the_store_and_the_new_watermark(outcome):
    b0, b1 = outcome["batch0"], outcome["batch1"]
    conf = json.loads(b1["offsets"][1])["conf"]
    assert conf["spark.sql.streaming.stateStore.providerClass"].endswith(
        "HDFSBackedStateStoreProvider"
    )
    assert b1["offsets"][2:] == b0["offsets"][2:]  # batch 0's source positions: nothing read
    # the next batch's watermark as if the 5-minute delay had always been used: 5 minutes later
    assert b1["commit"]["nextBatchWatermarkMs"] == b0["commit"]["nextBatchWatermarkMs"] + 300_000


def test_the_job_continues_exactly_on_the_hdfs_backed_store(outcome):
    assert outcome["run2"].input_rows == len(ARRIVALS[1])  # only the new file
    assert outcome["rows2"] == expected(ARRIVALS[0] + ARRIVALS[1])
    assert any(n.endswith(".snapshot") for n in outcome["files2"])


def test_new_code_with_a_state_field_and_a_column_is_migrated_by_a_rule(outcome):
    code, out, _ = outcome["plan2"]
    assert code == ExitCode.UPGRADE_MIGRATE
    for line in (
        "migrate      state.page_views: None -> 'bigint'",
        "migrate      output.page_views: None -> 'bigint'",
        "migrate      state_store: 'hdfs' -> 'rocksdb'",
    ):
        assert line in out
    code, _, err = outcome["bad_with"]
    assert code == 2 and "cannot import nowhere" in err and len(err.strip().splitlines()) == 1
    code, out, err = outcome["migrate2"]
    assert code == 0, err
    assert "rule: --with user_counts_v2:page_views_from_totals" in out
    assert outcome["plan2_after"][0] == 0
    ups = outcome["binding"]["upgrades"]
    assert [u["rewrite"]["batch"] for u in ups] == [
        1,
        3,
    ]  # after batch 2, one more that reads nothing


def test_v2_continues_exactly_with_every_page_view_counted(outcome):
    assert outcome["run3"].input_rows == len(ARRIVALS[2])
    assert outcome["rows3"] == expected(ARRIVALS[0] + ARRIVALS[1] + ARRIVALS[2], page_views=True)
    assert any(n.endswith(".zip") for n in outcome["files3"])  # RocksDB's files again


def test_service_health_transform_with_state_keeps_variables_and_timers(
    spark, tmp_path, monkeypatch
):
    """transformWithState: service_health (a value state, a list state of held logs, event-time
    timers) moves to a 2-minute watermark; migrate rewrites the state through the seed's
    initialState, so s3's held log and its timer survive: the next run alerts s3 stale at 35
    (its log at 30 + 5 minutes) and ok at 40, as a job that never stopped would. Before, the
    first run is a catch-up of the shipped (processing-time) spec: planned with the run's
    trigger, nothing changed; with the spec's, the time mode Spark pinned would change."""
    specs, land = tmp_path / "specs", tmp_path / "land"
    upgrade_env(monkeypatch, tmp_path)

    def spec(watermark: str, trigger: str = "available-now") -> None:
        raw = yaml.safe_load(
            (paths.project_root() / "include" / "jobs" / "service_health.yaml").read_text()
        )
        raw.update(
            inputs={"service-logs": str(land)},
            output=str(tmp_path / "out"),
            checkpoint=str(tmp_path / "ckpt" / "service_health"),
            shuffle_partitions=2,
            watermark=watermark,
            trigger=trigger,
            mode="catch-up",
        )
        raw["params"]["initial_state"] = None
        specs.mkdir(exist_ok=True)
        (specs / "service_health.yaml").write_text(yaml.safe_dump(raw))

    def log(svc: str, minute: float) -> dict:
        return {
            "event_id": f"{svc}-{minute}",
            "service": svc,
            "level": "INFO",
            "message": "m",
            "event_time": at(minute),
        }

    spec("1 minute", trigger="processing-time:30s")  # the shipped trigger: continuous
    write_lines(land, "a1.json", [log("s1", 0), log("s2", 1), log("s1", 2), log("s3", 30)])
    # A catch-up run of it (the catch-up DAG's), then its plan as the DAG's next one asks it.
    run_job(load_spec("service_health").with_overrides(trigger="available-now"), spark=spark)
    code, out, _ = cli("upgrade", "plan", "service_health", "--trigger", "available-now")
    assert code == 0 and "nothing changed" in out
    code, out, _ = cli("upgrade", "plan", "service_health")  # as a processing-time run
    assert code == ExitCode.UPGRADE_MIGRATE and "time_mode: 'EventTime' -> 'ProcessingTime'" in out
    spec("2 minutes")
    code, out, err = cli("upgrade", "migrate", "service_health")
    assert code == 0, err
    assert "state rewritten (3 keys, rule: variables' fields by name) as batch 2" in out
    write_lines(land, "a2.json", [log("s3", 40), log("s1", 45)])
    assert run_job(load_spec("service_health"), spark=spark).input_rows == 2
    assert rows(spark, str(tmp_path / "out")) == [
        ("s1", "stale", ts(7), ts(2)),
        ("s2", "stale", ts(6), ts(1)),
        ("s3", "ok", ts(40), ts(40)),  # its held log at 30 and its timer came through
        ("s3", "stale", ts(35), ts(30)),
    ]
