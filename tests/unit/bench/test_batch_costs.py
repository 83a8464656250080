"""The per-batch breakdown of ``make bench``: each job and stage of a batch lands in one column."""

from __future__ import annotations

import json

import pytest

from bench import batch_costs

pytestmark = pytest.mark.unit


def _task(stage: int, **metrics: int) -> dict:
    acc = [{"Name": k, "Update": str(v)} for k, v in metrics.items()]
    return {"Event": "SparkListenerTaskEnd", "Stage ID": stage, "Task Info": {"Accumulables": acc}}


def _job(job: int, stages: list[int], start: int, end: int, batch: str | None, desc: str = ""):
    props = {"spark.job.description": desc}
    if batch is not None:
        props["streaming.sql.batchId"] = batch
    return [
        {
            "Event": "SparkListenerJobStart",
            "Job ID": job,
            "Submission Time": start,
            "Stage IDs": stages,
            "Properties": props,
        },
        {"Event": "SparkListenerJobEnd", "Job ID": job, "Completion Time": end},
    ]


def _stage(stage: int, start: int, end: int) -> dict:
    info = {"Stage ID": stage, "Submission Time": start, "Completion Time": end}
    return {"Event": "SparkListenerStageCompleted", "Stage Info": info}


def test_a_batch_is_split_into_scan_stateful_count_delta_check_write_and_driver(tmp_path):
    events = [
        *_job(0, [0, 1, 2], 1000, 1900, "7"),  # scan 100, stateful 600, the rest the count
        _stage(0, 1000, 1100),
        _stage(1, 1100, 1700),
        _stage(2, 1700, 1900),
        _task(0),
        _task(1, **{"time to commit changes": 30, "time to execute Python code": 250}),
        _task(1, **{"time to commit changes": 20, "time to start Python workers": 40}),
        _task(2),
        *_job(1, [3], 2000, 2300, "7", "Delta: sessions: Compute snapshot for version: 3"),
        _stage(3, 2000, 2300),
        *_job(2, [4], 2300, 2500, "7"),  # reads the cached batch: no state store commit
        _stage(4, 2300, 2500),
        _task(4),
        *_job(3, [5], 2600, 2900, None),  # the background rebuild: off any batch
    ]
    log = tmp_path / "events"
    log.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    record = {
        "batchId": 7,
        "numInputRows": 100,
        "keys": {"emitted": 3},
        "durationMs": {
            "triggerExecution": 2000,
            "queryPlanning": 150,
            "walCommit": 20,
            "commitOffsets": 30,
        },
    }
    (row,) = batch_costs.breakdown(log, [record])
    assert row["plan"] == 150 and row["offsets"] == 50
    assert (row["scan"], row["stateful"], row["count"]) == (100, 600, 200)
    assert (row["delta_check"], row["write"]) == (300, 200)
    assert row["driver"] == 2000 - 150 - 50 - 900 - 300 - 200
    assert (row["python"], row["py_start"], row["state"]) == (250, 40, 50)
    assert batch_costs.off_batch_ms(log) == 300
