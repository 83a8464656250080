"""``upgrade migrate`` rewriting state (real Spark, Delta, RocksDB and HDFS-backed stores):
``user_counts`` started on ``state_store: hdfs`` with a 10-minute watermark moves to RocksDB and a
5-minute watermark in one migration, and continues exactly: the table holds the totals of every
event once, the first batch after the migration reads only the new file, and the checkpoint's
extra batch carries the new store and the recomputed watermark.

One shared run of each step (module fixture); the tests assert on its outcome."""

from __future__ import annotations

import contextlib
import io
import json
from collections import Counter
from pathlib import Path

import pytest
import yaml
from jobkit import at, rows, ts, write_lines

from spark_jobs.cli import main
from spark_jobs.contract import paths
from spark_jobs.contract.errors import ExitCode, UserError
from spark_jobs.contract.spec import load_spec
from spark_jobs.jobs.runner import run_job

pytestmark = pytest.mark.integration


def click(eid: str, user: str, minute: float, etype: str = "page_view") -> dict:
    return {
        "event_id": eid,
        "user_id": user,
        "event_type": etype,
        "page": "/p",
        "event_time": at(minute),
    }


ARRIVAL_1 = [
    click(f"a{i}", f"u{i % 3}", i, "purchase" if i % 4 == 0 else "page_view") for i in range(12)
]
ARRIVAL_2 = [
    click(f"b{i}", f"u{i % 4}", 30 + i, "purchase" if i % 3 == 0 else "page_view") for i in range(9)
]


def expected(events: list[dict]) -> list[tuple]:
    """Totals per user over ``events``, by the rule (CONTRACTS: one row per user, all events)."""
    total, bought, last = Counter(), Counter(), {}
    for e in events:
        u = e["user_id"]
        total[u] += 1
        bought[u] += e["event_type"] == "purchase"
        minute = int(e["event_id"][1:]) + (30 if e["event_id"][0] == "b" else 0)
        last[u] = max(last.get(u, -1), minute)
    return sorted((u, total[u], bought[u], ts(last[u])) for u in total)


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


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def outcome(spark, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("upgrade_migrate")
    specs = tmp / "specs"
    mp = pytest.MonkeyPatch()
    for k, v in {
        "STATEKEEPER_SPECS": specs,
        "STATEKEEPER_DATA": tmp / "data",
        "STATEKEEPER_CHECKPOINT_ROOTS": tmp / "ckpt",
        "STATEKEEPER_SNAPSHOT_ROOTS": tmp / "snaps",
    }.items():
        mp.setenv(k, str(v))
    got: dict = {"tmp": tmp}
    ck = tmp / "ckpt" / "user_counts"
    try:
        land = tmp / "land" / "clickstream"
        write_spec(specs, tmp, "hdfs", "10 minutes")
        write_lines(land, "a1.json", ARRIVAL_1)
        run_job(load_spec("user_counts"), spark=spark)
        got["watermark_before"] = json.loads((ck / "commits" / "0").read_text().split("\n")[1])
        write_spec(specs, tmp, "rocksdb", "5 minutes")
        got["plan"] = cli("upgrade", "plan", "user_counts")
        write_lines(land, "a2.json", ARRIVAL_2)
        with pytest.raises(UserError) as refused:
            run_job(load_spec("user_counts"), spark=spark)
        got["refused"] = refused.value
        got["migrate"] = cli("upgrade", "migrate", "user_counts")
        got["leftovers"] = sorted(p.name for p in ck.parent.iterdir())
        got["offsets_0"] = (ck / "offsets" / "0").read_text().split("\n")
        got["offsets_1"] = (ck / "offsets" / "1").read_text().split("\n")
        got["commit_1"] = json.loads((ck / "commits" / "1").read_text().split("\n")[1])
        got["binding"] = json.loads((ck / "_statekeeper" / "job.json").read_text())
        got["plan_after"] = cli("upgrade", "plan", "user_counts")
        got["run"] = run_job(load_spec("user_counts"), spark=spark)
        got["rows"] = rows(spark, str(tmp / "out"))
        got["state_files"] = sorted(p.name for p in (ck / "state" / "0" / "0").iterdir())
        yield got
    finally:
        mp.undo()


def test_plan_says_migrate_for_the_store_and_the_watermark(outcome):
    code, out, _ = outcome["plan"]
    assert code == ExitCode.UPGRADE_MIGRATE
    assert "migrate      state_store: 'hdfs' -> 'rocksdb'" in out
    assert "migrate      watermark_seconds: 600.0 -> 300.0" in out


def test_run_refuses_until_migrated(outcome):
    assert "upgrade migrate JOB" in str(outcome["refused"])


def test_migrate_rewrites_the_state_into_a_batch_that_reads_nothing(outcome):
    code, out, err = outcome["migrate"]
    assert code == 0, err
    assert "state rewritten (3 keys, rule: same rows) as batch 1" in out
    assert outcome["leftovers"] == ["user_counts"]  # nothing left beside the checkpoint
    version, meta, *sources = outcome["offsets_1"]
    conf = json.loads(meta)["conf"]
    assert conf["spark.sql.streaming.stateStore.providerClass"].endswith(
        "RocksDBStateStoreProvider"
    )
    assert sources == outcome["offsets_0"][2:]  # batch 0's source positions: nothing new read
    # the next batch's watermark as if the 5-minute delay had always been used: 5 minutes later
    before = outcome["watermark_before"]["nextBatchWatermarkMs"]
    assert outcome["commit_1"]["nextBatchWatermarkMs"] == before + 5 * 60 * 1000
    (up,) = outcome["binding"]["upgrades"]
    assert up["rewrite"] == {"rule": "same rows", "keys": 3, "batch": 1}
    assert outcome["binding"]["fingerprint"]["state_store"] == "rocksdb"
    assert outcome["plan_after"][0] == 0


def test_the_job_continues_exactly_on_rocksdb(outcome):
    assert outcome["run"].input_rows == len(ARRIVAL_2)  # only the new file
    assert outcome["rows"] == expected(ARRIVAL_1 + ARRIVAL_2)
    assert any(n.endswith(".zip") for n in outcome["state_files"])  # RocksDB's files now


def _hashes(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` but the lock file (its holder's record), by content."""
    import hashlib

    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != "lock"
    }


def test_a_kill_mid_migrate_leaves_the_checkpoint_as_it_was_and_a_rerun_finishes(
    spark, tmp_path, monkeypatch
):
    """SIGKILL ``upgrade migrate`` (RocksDB -> HDFS-backed store) after Spark rewrote the state
    into the new checkpoint, before the swap: the live checkpoint is byte for byte as it was,
    the same command again clears what the killed one left and migrates, and the job continues
    exactly on the HDFS-backed store."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from spark_jobs.upgrade.migrate import PAUSE_ENV

    specs = tmp_path / "specs"
    for k, v in {
        "STATEKEEPER_SPECS": specs,
        "STATEKEEPER_DATA": tmp_path / "data",
        "STATEKEEPER_CHECKPOINT_ROOTS": tmp_path / "ckpt",
        "STATEKEEPER_SNAPSHOT_ROOTS": tmp_path / "snaps",
    }.items():
        monkeypatch.setenv(k, str(v))
    ck, land = tmp_path / "ckpt" / "user_counts", tmp_path / "land" / "clickstream"
    write_spec(specs, tmp_path, "rocksdb", "10 minutes")
    write_lines(land, "a1.json", ARRIVAL_1)
    run_job(load_spec("user_counts"), spark=spark)
    write_spec(specs, tmp_path, "hdfs", "10 minutes")
    before = _hashes(ck)

    err = tmp_path / "migrate.err"
    root = Path(__file__).resolve().parents[2]
    with err.open("w") as fh:
        victim = subprocess.Popen(
            [sys.executable, "-m", "spark_jobs", "upgrade", "migrate", "user_counts"],
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(root), PAUSE_ENV: "rewritten"},
            stdout=subprocess.DEVNULL,
            stderr=fh,
            start_new_session=True,
        )
    deadline = time.time() + 600
    while "paused at rewritten" not in err.read_text() and victim.poll() is None:
        assert time.time() < deadline, "the migration never reached its pause"
        time.sleep(0.2)
    assert victim.poll() is None, f"the migration ended on its own: {err.read_text()[-800:]}"
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()

    assert _hashes(ck) == before  # untouched
    left = [p.name for p in ck.parent.iterdir() if p.name != "user_counts"]
    assert len(left) == 1 and left[0].startswith(".user_counts.migrate-")  # the killed one's work

    code, out, err_text = cli("upgrade", "migrate", "user_counts")
    assert code == 0, err_text
    assert "state rewritten (3 keys, rule: same rows) as batch 1" in out
    assert [p.name for p in ck.parent.iterdir()] == ["user_counts"]
    write_lines(land, "a2.json", ARRIVAL_2)
    assert run_job(load_spec("user_counts"), spark=spark).input_rows == len(ARRIVAL_2)
    assert rows(spark, str(tmp_path / "out")) == expected(ARRIVAL_1 + ARRIVAL_2)
    assert any(p.name.endswith(".snapshot") for p in (ck / "state" / "0" / "0").iterdir())


def test_new_code_adds_a_state_field_and_a_column_and_migrate_fills_it_with_a_rule(
    spark, tmp_path, monkeypatch
):
    """v1 runs; v2 (tests/integration/jobs_v2/user_counts_v2.py, deployed through
    STATEKEEPER_JOB_MODULES) keeps page_views in state and writes it. ``plan`` calls the new
    state field and the new column ``migrate``; ``migrate --with`` gives each key in state its
    page views from its v1 totals and adds the column to the table; the next run reads only the
    new file and the table's page_views equal every page view each user made."""
    from spark_jobs.jobs import EXTRA_MODULES_ENV

    specs = tmp_path / "specs"
    for k, v in {
        "STATEKEEPER_SPECS": specs,
        "STATEKEEPER_DATA": tmp_path / "data",
        "STATEKEEPER_CHECKPOINT_ROOTS": tmp_path / "ckpt",
        "STATEKEEPER_SNAPSHOT_ROOTS": tmp_path / "snaps",
    }.items():
        monkeypatch.setenv(k, str(v))
    land = tmp_path / "land" / "clickstream"
    write_spec(specs, tmp_path, "rocksdb", "10 minutes")
    write_lines(land, "a1.json", ARRIVAL_1)
    run_job(load_spec("user_counts"), spark=spark)

    monkeypatch.syspath_prepend(str(Path(__file__).parent / "jobs_v2"))
    monkeypatch.setenv(EXTRA_MODULES_ENV, "user_counts_v2")
    code, out, _ = cli("upgrade", "plan", "user_counts")
    assert code == ExitCode.UPGRADE_MIGRATE
    assert "migrate      state.page_views: None -> 'bigint'" in out
    assert "migrate      output.page_views: None -> 'bigint'" in out

    code, out, err = cli(
        "upgrade", "migrate", "user_counts", "--with", "nowhere_module:fn"
    )  # a mistake first: one line, nothing changed
    assert code == 2 and "cannot import nowhere_module" in err
    code, out, err = cli(
        "upgrade", "migrate", "user_counts", "--with", "user_counts_v2:page_views_from_totals"
    )
    assert code == 0, err
    assert "rule: --with user_counts_v2:page_views_from_totals" in out
    assert cli("upgrade", "plan", "user_counts")[0] == 0

    write_lines(land, "a2.json", ARRIVAL_2)
    assert run_job(load_spec("user_counts"), spark=spark).input_rows == len(ARRIVAL_2)
    views = Counter(e["user_id"] for e in ARRIVAL_1 + ARRIVAL_2 if e["event_type"] == "page_view")
    assert rows(spark, str(tmp_path / "out")) == [
        (*r, views[r[0]]) for r in expected(ARRIVAL_1 + ARRIVAL_2)
    ]
