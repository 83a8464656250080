"""Real DAG runs through ``dag.test()`` (local Spark, SQLite, generated data): a catch-up run
writes the job's Delta table and publishes its Asset with the version; a second run with no new
data succeeds and leaves the table's version unchanged; a backfill with bad params fails before
anything is submitted, with a reason that says what to fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from airflow_env import run_dags

from spark_jobs.generate import generate

pytestmark = pytest.mark.dags

JOB = "windowed_counts"  # the cheapest job of the seven: a built-in window aggregation


def _version(table: Path) -> int | None:
    from spark_jobs.contract import delta

    return delta.version(str(table))


def test_catch_up_writes_then_changes_nothing_and_bad_backfills_stop_early(airflow_home, tmp_path):
    data = tmp_path / "data"
    report = generate(
        "clickstream",
        str(data / "landing" / "clickstream"),
        events=3000,
        keys=50,
        seed=3,
        bad_rate=0.02,
    )
    table = data / "tables" / JOB
    log = tmp_path / "dag_runs.log"
    missing = data / "landing" / "no-such-folder"  # inside the landing root, just not there
    first, second, no_input, bad_mode, bad_job = run_dags(
        airflow_home,
        [
            {"dag_id": f"catchup_{JOB}"},
            {"dag_id": f"catchup_{JOB}"},
            {"dag_id": "backfill", "conf": {"job": JOB, "input": str(missing), "mode": "replace"}},
            {"dag_id": "backfill", "conf": {"job": JOB, "input": str(data), "mode": "overwrite"}},
            {"dag_id": "backfill", "conf": {"job": "nope", "input": str(data), "mode": "append"}},
        ],
        log,
        data=data,
        timeout=1500,
    )
    text = log.read_text()

    # 1. the catch-up run: every task succeeded, the table and its quarantine exist
    assert first["state"] == "success", first
    # emit_completeness is skipped when the run completed no event-time hour
    assert first["tasks"].pop("emit_completeness") in ("success", "skipped"), first["tasks"]
    assert set(first["tasks"].values()) == {"success"}, first["tasks"]
    v1 = first["returns"]["publish_asset"]["version"]
    assert v1 is not None and v1 >= 0 and (table / "_delta_log").is_dir()
    assert (table / "_quarantine" / "_delta_log").is_dir() and report.bad > 0

    # 2. nothing new: the run succeeds and the table is the same version
    assert second["state"] == "success", second
    assert second["returns"]["publish_asset"]["version"] == v1 == _version(table)

    # 3. bad backfill params: nothing submitted, a one-line reason
    assert no_input["state"] == "failed", no_input
    assert no_input["tasks"]["plan"] == "failed"
    assert all(
        no_input["tasks"][t] in ("upstream_failed", "None") for t in ("run_staged", "publish")
    )
    assert f"input folder {missing} does not exist or is not a folder" in text
    for refused in (bad_mode, bad_job):  # the Params schema refuses these before a run starts
        assert refused["state"] == "error" and "tasks" not in refused, refused
    assert "overwrite" in bad_mode["error"] and "nope" in bad_job["error"]
    assert not (data / "backfill").exists()  # no staged table or checkpoint was made


def test_backfill_publishes_once_and_an_identical_one_changes_nothing(airflow_home, tmp_path):
    data = tmp_path / "data"
    generate("clickstream", str(data / "landing" / "clickstream"), events=2000, keys=40, seed=4)
    replay = data / "landing" / "replay"  # the events to re-process, e.g. a corrected export
    generate("clickstream", str(replay), events=2000, keys=40, seed=5)
    table = data / "tables" / JOB
    conf = {"job": JOB, "input": str(replay), "mode": "replace"}
    live, first, again = run_dags(
        airflow_home,
        [
            {"dag_id": f"catchup_{JOB}", "conf": {"run_quality": False}},
            {"dag_id": "backfill", "conf": conf},
            {"dag_id": "backfill", "conf": conf},
        ],
        tmp_path / "backfill.log",
        data=data,
        timeout=1500,
    )
    from spark_jobs.contract import delta

    assert live["state"] == "success", live
    before = live["returns"]["publish_asset"]["version"]
    assert first["state"] == "success", first
    # the re-completion events: the job's own emitter (skipped when the publish changed no
    # complete hour), every other job's skipped
    emits = {t: first["tasks"].pop(t) for t in list(first["tasks"]) if t.startswith("emit_")}
    assert emits.pop(f"emit_recompletions_{JOB}") in ("success", "skipped"), emits
    assert set(emits.values()) == {"skipped"}, emits
    assert set(first["tasks"].values()) == {"success"}, first["tasks"]
    plan = first["returns"]["plan"]
    assert plan["live_table"] == str(table) and plan["published_in_version"] is None
    # the staged run used its own checkpoint: the live one was never touched
    assert Path(plan["staged_checkpoint"]).is_dir() and plan["staged_checkpoint"].startswith(
        str(data / "backfill" / JOB)
    )
    commits = delta.commits(str(table), after=before)
    assert len(commits) == 1, commits  # one commit makes the whole backfill visible
    assert commits[0].user_metadata.startswith(f"statekeeper-backfill:{plan['key']} mode=replace")
    after = delta.version(str(table))

    assert again["state"] == "success", again
    assert again["tasks"]["plan"] == "skipped" and again["tasks"]["run_staged"] == "skipped"
    assert delta.version(str(table)) == after  # the identical backfill changed nothing
