"""Airflow's side of lineage: the OpenLineage provider is off until a transport is configured,
and then the task that submits a run reports, through the provider's own extractor, the same
datasets (landing folder or Kafka topic in, the two Delta tables out) as the run's streaming
events (tests/integration/test_eventlog_run.py)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.unit


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


def test_the_run_task_reports_the_jobs_datasets(tmp_path):
    from airflow.providers.openlineage.extractors.base import DefaultExtractor

    from spark_jobs.contract.paths import resolve
    from statekeeper.submit import SparkJobRunOperator

    kafka = "kafka://127.0.0.1:9092,127.0.0.1:9093/clicks"
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
