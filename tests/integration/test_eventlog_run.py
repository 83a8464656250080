"""A real run's event log and OpenLineage events (real Spark, real Delta, the client's file
transport): one ``batch`` row per committed batch naming the files it read and the Delta version
that holds it, a ``start`` and a ``stop``; and ONE OpenLineage run for the query (START,
RUNNING, COMPLETE, all with Spark's run id), whose datasets are the landing folder and the two
tables and whose ``statekeeper_batches`` facet maps every batch to its files and version."""

import json
from pathlib import Path

import pytest
from jobkit import job_spec

from spark_jobs.contract import delta, events
from spark_jobs.generate import generate
from spark_jobs.jobs.runner import run_job
from spark_jobs.runtime import progress

pytestmark = pytest.mark.integration


def test_a_run_logs_its_batches_and_its_lineage(spark, tmp_path, monkeypatch):
    lineage = tmp_path / "lineage.jsonl"
    monkeypatch.setenv("STATEKEEPER_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__TYPE", "file")
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__LOG_FILE_PATH", str(lineage))
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__APPEND", "true")
    monkeypatch.setenv("STATEKEEPER_LINEAGE_EVERY_SECONDS", "0")  # a RUNNING per append
    monkeypatch.setenv("STATEKEEPER_EVENTS_FLUSH_SECONDS", "0.2")
    land = tmp_path / "land" / "clickstream"
    for seed in (1, 2):
        generate("clickstream", str(land), 100, keys=10, seed=seed, bad_rate=0.05)
    spec = job_spec("windowed_counts", tmp_path, max_files_per_trigger=1)

    run_job(spec, spark=spark)

    committed = sorted(
        int(p.name) for p in (tmp_path / "ckpt" / "commits").iterdir() if p.name.isdigit()
    )
    rows = events.read(job="windowed_counts", kind="batch")
    assert [r["batch_id"] for r in rows] == committed and len(committed) >= 2
    records = {r["batchId"]: r for r in progress.read_progress(str(tmp_path / "ckpt"))}
    assert sum(r["input_rows"] for r in rows) == 200
    files = [f for r in rows for f in events.details(r)["sources"][0]["files"]]
    assert sorted(f.rsplit("/", 1)[-1] for f in files) == sorted(
        p.name for p in land.glob("clickstream-*.json")
    )
    qid = rows[0]["query_id"]
    for r in rows:
        assert r["run_id"] == records[r["batch_id"]]["runId"]
        for col, table in (
            ("output_version", spec.output),
            ("quarantine_version", spec.quarantine),
        ):
            if r[col] is not None:  # the version whose commit recorded this batch
                assert delta.commit(table, r[col]).txns[qid] == r["batch_id"]
    assert rows[0]["output_version"] is not None and rows[0]["quarantine_version"] is not None
    lifecycle = [r["kind"] for r in events.read(job="windowed_counts") if r["kind"] != "batch"]
    assert lifecycle == ["start", "stop"]

    sent = [json.loads(line) for line in lineage.read_text().splitlines()]
    types = [e["eventType"] for e in sent]
    assert types[0] == "START" and types[-1] == "COMPLETE" and set(types[1:-1]) <= {"RUNNING"}
    assert {e["run"]["runId"] for e in sent} == {rows[0]["run_id"]}
    assert {(d["namespace"], d["name"]) for d in sent[0]["inputs"]} == {("file", str(land))}
    assert {d["name"] for d in sent[0]["outputs"]} == {spec.output, spec.quarantine}
    facet: dict[str, dict] = {}
    for e in sent:
        facet.update(e["run"]["facets"].get("statekeeper_batches", {}).get("batches", {}))
    assert sorted(map(int, facet)) == committed
    for r in rows:
        mapped = facet[str(r["batch_id"])]
        assert mapped["output_version"] == r["output_version"]
        assert mapped["sources"][0]["files"] == events.details(r)["sources"][0]["files"]


def test_the_docs_sql_runs_on_spark_too(spark, tmp_path, monkeypatch):
    import importlib.util

    from spark_jobs.contract.paths import events_table
    from spark_jobs.eventlog import store

    # the unit test's rows and expectations for the page's five queries: one source of both
    where = Path(__file__).resolve().parents[1] / "unit" / "test_events_docs.py"
    loaded = importlib.util.spec_from_file_location("events_docs", where)
    assert loaded is not None and loaded.loader is not None
    docs = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(docs)
    monkeypatch.setenv("STATEKEEPER_DATA", str(tmp_path))
    store.append(docs.ROWS)
    for sql, want in zip(docs.queries(), docs.expected(), strict=True):
        on_path = sql.replace("FROM events", f"FROM delta.`{events_table()}`")
        got = [r.asDict() for r in spark.sql(on_path).collect()]
        assert docs.first_columns(got, len(want[0])) == want, sql
