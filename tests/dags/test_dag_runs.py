"""Real DAG runs through ``dag.test()`` (local Spark, SQLite, generated data): a catch-up run
writes the job's Delta table and publishes its Asset with the version; a second run with no new
data succeeds and leaves the table's version unchanged; a backfill with bad params fails before
anything is submitted, with a reason that says what to fix; a backfill publishes its staged run
into the live table in one commit, and the identical backfill again changes nothing.

Every run is one module fixture, in one Airflow process, in that order (the backfills need the
live table the catch-up made); each test asserts on its part of the outcome."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from airflow_env import run_dags

from spark_jobs.generate import generate

pytestmark = pytest.mark.dags

JOB = "windowed_counts"  # the cheapest job of the seven: a built-in window aggregation


@pytest.fixture(scope="module")
def outcome(airflow_home, tmp_path_factory) -> dict[str, Any]:
    tmp_path = tmp_path_factory.mktemp("dag_runs")
    data = tmp_path / "data"
    report = generate(
        "clickstream",
        str(data / "landing" / "clickstream"),
        events=3000,
        keys=50,
        seed=3,
        bad_rate=0.02,
    )
    replay = data / "landing" / "replay"  # the events to re-process, e.g. a corrected export
    generate("clickstream", str(replay), events=2000, keys=40, seed=5)
    missing = data / "landing" / "no-such-folder"  # inside the landing root, just not there
    conf = {"job": JOB, "input": str(replay), "mode": "replace"}
    log = tmp_path / "dag_runs.log"
    names = ["first", "second", "no_input", "bad_mode", "bad_job", "backfill", "again"]
    runs = run_dags(
        airflow_home,
        [
            {"dag_id": f"catchup_{JOB}"},
            {"dag_id": f"catchup_{JOB}"},
            {"dag_id": "backfill", "conf": {"job": JOB, "input": str(missing), "mode": "replace"}},
            {"dag_id": "backfill", "conf": {"job": JOB, "input": str(data), "mode": "overwrite"}},
            {"dag_id": "backfill", "conf": {"job": "nope", "input": str(data), "mode": "append"}},
            {"dag_id": "backfill", "conf": conf},
            {"dag_id": "backfill", "conf": conf},
        ],
        log,
        data=data,
        timeout=1800,
    )
    return {
        **dict(zip(names, runs, strict=True)),
        "data": data,
        "missing": missing,
        "bad": report.bad,
        "text": log.read_text(),
    }


def test_catch_up_writes_then_changes_nothing_and_bad_backfills_stop_early(outcome):
    first, second, no_input, bad_mode, bad_job = (
        outcome[k] for k in ("first", "second", "no_input", "bad_mode", "bad_job")
    )
    data, missing, text = outcome["data"], outcome["missing"], outcome["text"]
    table = data / "tables" / JOB

    # 1. the catch-up run: every task succeeded, the table and its quarantine exist
    assert first["state"] == "success", first
    # emit_completeness is skipped when the run completed no event-time hour
    assert first["tasks"].pop("emit_completeness") in ("success", "skipped"), first["tasks"]
    assert set(first["tasks"].values()) == {"success"}, first["tasks"]
    v1 = first["returns"]["publish_asset"]["version"]
    assert v1 is not None and v1 >= 0 and (table / "_delta_log").is_dir()
    assert (table / "_quarantine" / "_delta_log").is_dir() and outcome["bad"] > 0

    # 2. nothing new: the run succeeds and the table is the same version (the backfills later
    # publish into it: its version after the second run is the backfill's base, asserted below)
    assert second["state"] == "success", second
    assert second["returns"]["publish_asset"]["version"] == v1

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
    # no staged table or checkpoint was made for them: the only folder under backfill/ is the
    # good backfill's (backfill/<job>/<key>, run after them)
    key = outcome["backfill"]["returns"]["plan"]["key"]
    assert [p.relative_to(data) for p in (data / "backfill").glob("*/*")] == [
        Path("backfill", JOB, key)
    ]


def test_backfill_publishes_once_and_an_identical_one_changes_nothing(outcome):
    from spark_jobs.contract import delta

    first, again, data = outcome["backfill"], outcome["again"], outcome["data"]
    table = data / "tables" / JOB
    before = outcome["second"]["returns"]["publish_asset"]["version"]
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
    # one commit makes the whole backfill visible, and the identical backfill (run after it)
    # made none
    commits = delta.commits(str(table), after=before)
    assert len(commits) == 1, commits
    assert commits[0].user_metadata.startswith(f"statekeeper-backfill:{plan['key']} mode=replace")

    assert again["state"] == "success", again
    assert again["tasks"]["plan"] == "skipped" and again["tasks"]["run_staged"] == "skipped"
