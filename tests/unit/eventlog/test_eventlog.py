"""The event log without Spark: a run's writer on a synthetic checkpoint (Spark's file layout),
the real Delta table (deltalake), the command line and the health API's older history.

- exactly one ``batch`` row per committed batch: rows missing after a run died are re-derived at
  the next start (from the progress log while it has the batch, else from the checkpoint), and
  neither a second start nor a progress record handed over twice writes a row again;
- ``python -m spark_jobs events`` prints the rows (one line each, ``--json``, ``--kind``,
  ``--since``) and refuses an unknown job or time in one line;
- an operation's row says who did it (Airflow's task context, else ``cli:USER``);
- the health API's history reaches back past what the progress log still holds."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import pytest

from bench.synthetic_progress import record
from spark_jobs.checkpoints.synthetic import make_checkpoint
from spark_jobs.contract import events
from spark_jobs.contract.spec import load_spec

pytestmark = pytest.mark.unit

QID = "00000000-0000-0000-0000-000000000007"  # make_checkpoint's query id
RUN = "11111111-2222-3333-4444-555555555555"


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """Specs and data under the test's folder; the event log at <tmp>/data/tables/..."""
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "sessions.yaml").write_text(
        f"name: sessions\nmode: catch-up\ninputs: {{clickstream: {tmp_path}/landing}}\n"
        f"output: {tmp_path}/out\ncheckpoint: {tmp_path}/ckpt\nwatermark: 10 minutes\n"
    )
    monkeypatch.setenv("STATEKEEPER_SPECS", str(specs))
    monkeypatch.setenv("STATEKEEPER_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("STATEKEEPER_CHECKPOINT_ROOTS", str(tmp_path))
    for var in ("AIRFLOW_CTX_DAG_ID", "AIRFLOW_CTX_DAG_RUN_ID", "AIRFLOW_CTX_TASK_ID"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def progress_lines(ckpt: Path, batches: range, end: float) -> list[dict]:
    rng = random.Random(3)
    recs = [
        record("sessions", b, end - (batches[-1] - b) * 30, rng, (QID, RUN), True) for b in batches
    ]
    log = ckpt / "_statekeeper" / "progress.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return recs


def one_run(batches: list[dict] | None = None) -> None:
    """What the runner does around a query: open, the query starts, its batches, close."""
    from spark_jobs.eventlog.runlog import RunLog

    log = RunLog(load_spec("sessions"), {"trigger": "available-now"})
    log.begin()
    log.started(QID, RUN)
    for rec in batches or []:
        log.batch(rec)
    log.close(None)


def batch_ids() -> list[int]:
    return [r["batch_id"] for r in events.read(job="sessions", kind="batch")]


def test_every_committed_batch_gets_one_row_after_a_dead_run(home):
    make_checkpoint(home / "ckpt", 5)  # batches 0..4 committed
    # 0 and 1 rotated out of the log: their rows take the time of their commit files (now)
    progress_lines(home / "ckpt", range(2, 5), time.time() + 90)

    one_run()  # the start after the run that died: re-derives 0..4

    rows = events.read(job="sessions", kind="batch")
    assert [r["batch_id"] for r in rows] == [0, 1, 2, 3, 4]
    assert all(r["query_id"] == QID for r in rows)
    assert [events.details(r)["sources"][0]["files"] for r in rows] == [
        [f"file:///landing/f{b}.json"] for b in range(5)
    ]
    assert [r["input_rows"] is not None for r in rows] == [False, False, True, True, True]
    assert events.details(rows[2])["progress"]["batchId"] == 2
    kinds = [r["kind"] for r in events.read(job="sessions") if r["kind"] != "batch"]
    assert kinds == ["restart", "stop"]

    one_run()  # nothing missing now: nothing written twice
    assert batch_ids() == [0, 1, 2, 3, 4]
    assert [r["kind"] for r in events.read(job="sessions", kind="start")] == ["start"]


def test_a_batch_handed_over_twice_is_written_once(home):
    make_checkpoint(home / "ckpt", 3)
    recs = progress_lines(home / "ckpt", range(0, 3), time.time())
    one_run()
    make_checkpoint(home / "ckpt", 4)  # batch 3 committed by the next run
    rec3 = {**recs[-1], "batchId": 3}
    one_run([rec3, rec3, recs[0]])  # a replayed record and one of an old batch
    assert batch_ids() == [0, 1, 2, 3]
    assert events.written_batch(QID) == 3


def test_events_command(home, capsys):
    from spark_jobs.cli import main
    from spark_jobs.eventlog import record

    make_checkpoint(home / "ckpt", 2)
    progress_lines(home / "ckpt", range(0, 2), time.time())
    one_run()
    record("snapshot", "sessions", str(home / "ckpt"), details={"snapshot": "s1", "batch": 1})
    capsys.readouterr()

    assert main(["events", "sessions"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in lines] == ["batch", "batch", "restart", "stop", "snapshot"]
    assert "batch=1 " in lines[1] and lines[4].split()[2].startswith("who=cli:")

    assert main(["events", "sessions", "--kind", "snapshot", "--json"]) == 0
    (obj,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert obj["details"] == {"snapshot": "s1", "batch": 1} and obj["kind"] == "snapshot"

    assert main(["events", "sessions", "--since", "1h", "--kind", "batch"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2
    assert main(["events", "sessions", "--since", "2999-01-01"]) == 0
    assert capsys.readouterr().out == ""

    assert main(["events", "nosuchjob"]) == 2
    assert "unknown job 'nosuchjob'" in capsys.readouterr().err
    assert main(["events", "sessions", "--since", "last tuesday"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("statekeeper: --since 'last tuesday' is neither") and "\n" not in err


def test_an_operation_row_says_who_did_it(home, monkeypatch):
    from spark_jobs.eventlog import record, who

    who.remember(["checkpoint", "restore", "--job", "sessions"])
    monkeypatch.setenv("AIRFLOW_CTX_DAG_ID", "restore_dag")
    monkeypatch.setenv("AIRFLOW_CTX_DAG_RUN_ID", "manual__1")
    monkeypatch.setenv("AIRFLOW_CTX_TASK_ID", "restore")
    record("restore", "sessions", "/c", details={"snapshot": "s2"})
    (row,) = events.read(job="sessions", kind="restore")
    assert row["who"] == "airflow:restore_dag/manual__1/restore"
    assert row["args"] == "python -m spark_jobs checkpoint restore --job sessions"
    assert row["batch_id"] is None and row["at"].timestamp() == pytest.approx(time.time(), abs=60)


def test_health_history_reaches_past_the_progress_log(home):
    from statekeeper import health_history

    now = time.time()
    make_checkpoint(home / "ckpt", 10)
    recs = progress_lines(home / "ckpt", range(0, 10), now)
    one_run()  # every batch has its row, with its progress record
    progress_lines(home / "ckpt", range(6, 10), now)  # rotation dropped batches 0..5
    spec = load_spec("sessions")

    got = health_history.series(spec, since=now - 3600)
    assert [p["batch"] for p in got["points"]] == list(range(10))
    got = health_history.series(spec, last=8)
    assert [p["batch"] for p in got["points"]] == list(range(2, 10))
    assert got["points"][0]["input_rows"] == recs[2]["numInputRows"]
    older = health_history.with_older(spec, [], 3, None, recs[5]["statekeeper"]["logged_at"])
    assert [r["batchId"] for r in older] == [3, 4, 5]

    from fastapi.testclient import TestClient

    from statekeeper.health_app import create_app

    got = TestClient(create_app(auth=False)).get("/api/jobs/sessions/progress?limit=8").json()
    assert [r["batchId"] for r in got] == list(range(2, 10))
    assert got[0] == recs[2]  # the record as it was logged, from the event log


def test_checkpoint_commands_log_their_success_only(home, capsys):
    from spark_jobs.cli import main

    make_checkpoint(home / "ckpt", 4)
    assert main(["checkpoint", "snapshot", "sessions", "--dry-run"]) == 0
    assert main(["checkpoint", "snapshot", "sessions"]) == 0
    assert main(["checkpoint", "rollback", "sessions", "--to-batch", "9"]) == 2  # refused
    assert main(["checkpoint", "rollback", "sessions", "--to-batch", "2", "--keep-tables"]) == 0
    rows = [r for r in events.read(job="sessions") if r["kind"] != "batch"]
    assert [r["kind"] for r in rows] == ["snapshot", "rollback"]
    assert {r["checkpoint"] for r in rows} == {str(home / "ckpt")}
    assert events.details(rows[0])["batch"] == 3
    assert events.details(rows[1])["moved_batches"] == [3]
    assert rows[1]["args"].endswith("rollback sessions --to-batch 2 --keep-tables")


def test_since_takes_a_time_or_a_duration_and_a_huge_duration_means_from_the_start():
    from spark_jobs.eventlog.cli import since_time

    assert since_time("2026-11-23T09:00:00Z") == 1795424400.0
    assert abs(time.time() - since_time("2h") - 7200) < 5
    assert since_time("99999999h") == 0.0  # 11,000 years back: was a ValueError traceback
