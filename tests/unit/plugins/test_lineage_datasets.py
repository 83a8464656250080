"""Airflow's side of lineage: the OpenLineage provider is off until a transport is configured,
and then the task that submits a run reports, through the provider's own extractor, the same
datasets (landing folder or Kafka topic in, the two Delta tables out) as the run's streaming
events (tests/integration/test_eventlog_run.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]


def _provider_disabled() -> bool:
    from airflow.providers.openlineage import conf

    for read in (conf.is_disabled, conf.transport, conf.config_path, conf.config_conn_id):
        getattr(read, "cache_clear", lambda: None)()  # cached outside Airflow's own tests
    return conf.is_disabled()


def test_the_provider_is_enabled_only_by_a_transport(monkeypatch):
    for var in ("OPENLINEAGE_URL", "OPENLINEAGE_CONFIG", "OPENLINEAGE_DISABLED"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("AIRFLOW__OPENLINEAGE__TRANSPORT", raising=False)
    from spark_jobs.contract import lineage

    assert _provider_disabled() and not lineage.configured()
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__TYPE", "console")
    assert not _provider_disabled() and lineage.configured()


def test_the_run_task_reports_the_jobs_datasets(tmp_path, monkeypatch):
    from airflow.providers.openlineage.extractors.base import DefaultExtractor

    from spark_jobs.contract.paths import resolve
    from statekeeper.submit import SparkJobRunOperator

    # a spec that reads Kafka (a run-time input may only name another topic of its cluster)
    specs = tmp_path / "specs"
    specs.mkdir()
    for f in (ROOT / "include" / "jobs").glob("*.yaml"):
        (specs / f.name).write_text(f.read_text())
    example = (ROOT / "include" / "examples" / "kafka" / "sessions.yaml").read_text()
    (specs / "sessions.yaml").write_text(example.replace("kafka:9092", "127.0.0.1:9092"))
    monkeypatch.setenv("STATEKEEPER_SPECS", str(specs))
    kafka = "kafka://127.0.0.1:9092/clicks"
    op = SparkJobRunOperator(
        task_id="run", job="sessions", overrides={"input": kafka, "output": str(tmp_path / "t")}
    )
    got = DefaultExtractor(op).extract_on_complete(None)
    assert got is not None
    assert [(d.namespace, d.name) for d in got.inputs] == [("kafka://127.0.0.1:9092", "clicks")]
    assert [(d.namespace, d.name) for d in got.outputs] == [
        ("file", str(tmp_path / "t")),
        ("file", str(tmp_path / "t" / "_quarantine")),
    ]
    op = SparkJobRunOperator(task_id="run", job="windowed_counts")
    (src,) = DefaultExtractor(op).extract_on_complete(None).inputs
    assert (src.namespace, src.name) == ("file", resolve(".data/landing/clickstream"))


def test_a_query_run_is_throttled_and_off_without_a_transport(tmp_path, monkeypatch):
    import json

    from spark_jobs.contract.spec import load_spec
    from spark_jobs.eventlog import lineage

    for var in ("OPENLINEAGE_URL", "OPENLINEAGE_CONFIG", "OPENLINEAGE__TRANSPORT__TYPE"):
        monkeypatch.delenv(var, raising=False)
    spec = load_spec("sessions")
    assert lineage.for_spec(spec) is None  # no transport: nothing emitted, not even to a console

    sent = tmp_path / "ol.jsonl"
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__TYPE", "file")
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__LOG_FILE_PATH", str(sent))
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__APPEND", "true")
    run = lineage.for_spec(spec)
    assert run is not None
    run.start("01937a4e-0000-7000-8000-000000000001")
    for b in range(5):  # five batches in well under a minute: no RUNNING event yet
        run.batch(b, [{"source": 0, "files": [f"f{b}"]}], {"output_version": b})
        run.tick()
    run.end(None)
    events = [json.loads(line) for line in sent.read_text().splitlines()]
    assert [e["eventType"] for e in events] == ["START", "COMPLETE"]
    batches = events[-1]["run"]["facets"]["statekeeper_batches"]["batches"]
    assert sorted(batches) == ["0", "1", "2", "3", "4"] and batches["3"]["output_version"] == 3
