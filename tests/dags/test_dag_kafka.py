"""A catch-up DAG run on a Kafka spec (``dag.test()``, real broker, local Spark): the
``catchup_windowed_counts`` DAG with its spec's input pointed at a 3-partition topic reads every
record once (bad ones quarantined with their topic/partition/offset), and its progress says the
job is caught up (lag 0)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from airflow_env import run_dags

from spark_jobs.generate import generate

pytestmark = pytest.mark.dags

ROOT = Path(__file__).resolve().parents[2]
JOB = "windowed_counts"  # the cheapest job: a built-in window aggregation


def test_catch_up_dag_reads_a_kafka_topic(airflow_home, tmp_path, kafka_broker, monkeypatch):
    from deltalake import DeltaTable

    from spark_jobs.runtime.progress import read_progress

    data = tmp_path / "data"
    monkeypatch.setenv("STATEKEEPER_DATA", str(data))  # generate's staging folder
    uri = f"kafka://{kafka_broker}/clicks-dag"
    report = generate("clickstream", uri, events=600, keys=30, seed=3, bad_rate=0.03)
    specs = tmp_path / "specs"  # every real spec (all DAG files load), this one on the topic
    specs.mkdir()
    for f in (ROOT / "include" / "jobs").glob("*.yaml"):
        raw = yaml.safe_load(f.read_text())
        if raw["name"] == JOB:
            raw["inputs"] = {"clickstream": uri}
        (specs / f.name).write_text(yaml.safe_dump(raw))
    monkeypatch.setenv("STATEKEEPER_SPECS", str(specs))  # the Airflow subprocess inherits it

    (run,) = run_dags(
        airflow_home,
        [{"dag_id": f"catchup_{JOB}"}],
        tmp_path / "dag_runs.log",
        data=data,
        timeout=1500,
    )

    assert run["state"] == "success", run
    # emit_completeness is skipped when the run completed no event-time hour
    assert run["tasks"].pop("emit_completeness") in ("success", "skipped"), run["tasks"]
    assert set(run["tasks"].values()) == {"success"}, run["tasks"]
    assert run["returns"]["publish_asset"]["version"] is not None
    records = read_progress(str(data / "checkpoints" / JOB))
    assert sum(r["numInputRows"] for r in records) == report.events + report.bad
    assert records[-1]["lag"] == {
        "clicks-dag": {"behind": 0, "partitions": {"0": 0, "1": 0, "2": 0}}
    }
    bad = DeltaTable(str(data / "tables" / JOB / "_quarantine")).to_pyarrow_table()
    assert bad.num_rows == report.bad
    assert all(s.startswith("kafka://clicks-dag/") for s in bad.column("source_file").to_pylist())
