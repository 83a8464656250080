"""The Streaming health API on synthetic progress logs (no Spark, no api-server): every number it
returns is the log's own, histories are downsampled without losing dropped rows, the tail reader
equals a forward read, and the last quality verdict is read from the results table's Delta log.
Login (401 / 200 with a real token) is tested against a real api-server in tests/e2e."""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path

import pytest

from bench.synthetic_progress import write_history

pytestmark = pytest.mark.unit

NOW = time.time()


def _spec(folder: Path, name: str, root: Path, mode: str = "catch-up") -> None:
    (folder / f"{name}.yaml").write_text(
        f"name: {name}\nmode: {mode}\ninputs: {{clickstream: {root}/landing}}\n"
        f"output: {root}/tables/{name}\ncheckpoint: {root}/checkpoints/{name}\nwatermark: 10 minutes\n"
    )


def _seconds(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def _log(root: Path, job: str) -> list[dict]:
    text = (root / "checkpoints" / job / "_statekeeper" / "progress.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture
def client(tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    from statekeeper.health_app import create_app

    specs = tmp_path / "specs"
    specs.mkdir()
    for name in ("keyed", "bucketed", "fresh"):
        _spec(specs, name, tmp_path)
    monkeypatch.setenv("STATEKEEPER_SPECS", str(specs))
    write_history(tmp_path / "checkpoints" / "keyed", "keyed", 2000, NOW - 60, seed=1)
    write_history(tmp_path / "checkpoints" / "bucketed", "bucketed", 30, NOW - 60, keys=False)
    # the auth dependency is Airflow's and needs its api-server: tested end to end
    return TestClient(create_app(auth=False)), tmp_path


def test_health_numbers_equal_the_log(client):
    http, root = client
    rows = {r["job"]: r for r in http.get("/api/health").json()}
    assert sorted(rows) == ["bucketed", "fresh", "keyed"]
    assert rows["fresh"]["status"] == "never_run" and rows["fresh"]["state_keys"] is None
    for job in ("keyed", "bucketed"):
        last = _log(root, job)[-1]
        row = rows[job]
        ops = last["stateOperators"]
        assert row["status"] == "idle"  # catch-up jobs between runs
        assert row["last_batch_id"] == last["batchId"]
        assert row["last_batch_at"] == last["timestamp"][:19] + "Z"
        assert row["input_rows_per_second"] == last["inputRowsPerSecond"]
        assert row["processed_rows_per_second"] == last["processedRowsPerSecond"]
        assert row["batch_duration_ms"] == last["durationMs"]["triggerExecution"]
        assert row["state_memory_bytes"] == sum(op["memoryUsedBytes"] for op in ops)
        assert row["dropped_by_watermark"] == sum(op["numRowsDroppedByWatermark"] for op in ops)
        assert row["watermark"] == last["eventTime"]["watermark"]
        newest = max(_seconds(r["eventTime"]["max"]) for r in _log(root, job)[-20:])
        delay = newest - _seconds(last["eventTime"]["watermark"])
        assert row["watermark_delay_seconds"] == pytest.approx(delay, abs=0.001)
    # user keys when the record counts them, else Spark's state rows (hash buckets)
    keyed, bucketed = _log(root, "keyed")[-1], _log(root, "bucketed")[-1]
    assert rows["keyed"]["state_keys"] == keyed["keys"]["total"] != 256
    assert rows["keyed"]["state_keys_counted"] == "keys"
    assert rows["bucketed"]["state_keys"] == bucketed["stateOperators"][0]["numRowsTotal"]
    assert rows["bucketed"]["state_keys_counted"] == "state_rows"


def test_progress_limit_range_and_unknown_job(client):
    http, root = client
    log = _log(root, "keyed")
    got = http.get("/api/jobs/keyed/progress", params={"limit": 5}).json()
    assert got == log[-5:]
    since, until = log[100]["timestamp"], log[109]["timestamp"]
    got = http.get("/api/jobs/keyed/progress", params={"since": since, "until": until}).json()
    assert [r["batchId"] for r in got] == list(range(100, 110))
    missing = http.get("/api/jobs/nope/progress")
    assert missing.status_code == 404 and "unknown job 'nope'" in missing.json()["detail"]
    assert http.get("/api/jobs/keyed/progress", params={"limit": 5000}).status_code == 422
    assert http.get("/api/jobs/keyed/progress", params={"since": "yesterday"}).status_code == 400


@pytest.mark.parametrize("when", ["1e20", "-1e20", "nan", "inf"])
@pytest.mark.parametrize("route", ["series", "progress"])
def test_a_time_no_calendar_holds_is_a_400_with_its_reason(client, route, when):
    http, _ = client
    got = http.get(f"/api/jobs/keyed/{route}", params={"since": when})
    assert got.status_code == 400, got.text
    assert got.json()["detail"].startswith(f"since={when!r} is not a time")


def test_series_downsamples_long_histories(client):
    http, root = client
    log = _log(root, "keyed")
    data = http.get("/api/jobs/keyed/series", params={"range": "all", "points": 100}).json()
    assert data["batches"] == 2000 and data["downsampled"] and len(data["points"]) == 100
    assert sum(p["batches"] for p in data["points"]) == 2000
    dropped = sum(r["stateOperators"][0]["numRowsDroppedByWatermark"] for r in log)
    assert sum(p["dropped_by_watermark"] for p in data["points"]) == dropped
    assert data["points"][-1]["state_keys"] == log[-1]["keys"]["total"]
    assert max(p["batch_duration_ms"] for p in data["points"]) == max(
        r["durationMs"]["triggerExecution"] for r in log
    )
    # appended batches are read on the next request, the cached history kept
    logfile = root / "checkpoints" / "keyed" / "_statekeeper" / "progress.jsonl"
    extra = [dict(log[-1], batchId=2000 + i, timestamp=log[-1]["timestamp"]) for i in range(3)]
    with open(logfile, "a") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in extra))
    grown = http.get("/api/jobs/keyed/series", params={"range": "all", "points": 2000}).json()
    assert grown["batches"] == 2003 and grown["points"][-1]["batch"] == 2002
    recent = http.get("/api/jobs/keyed/series").json()  # default: the last 100 batches
    assert recent["batches"] == 100 and recent["points"][0]["batch"] == 1903
    page = http.get("/jobs/keyed", params={"range": "all"})
    assert page.status_code == 200 and page.text.count("<figure class=chart") == 6
    assert "2,003 batches in range" in page.text


def test_tail_reader_equals_forward_read(tmp_path):
    from spark_jobs.contract.progress_log import reverse_lines

    path = tmp_path / "log.jsonl"
    lines = [json.dumps({"batchId": i, "pad": "x" * (i % 37)}) for i in range(500)]
    path.write_text("\n".join(lines) + "\n")
    for block in (7, 64, 1000, 1 << 20):  # lines cut across block ends in every way
        got = [b.decode() for b in reverse_lines(path, block) if b.strip()]
        assert got == lines[::-1]


def test_last_quality_verdict_from_results_table(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from statekeeper.health_report import _last_quality

    table = tmp_path / "results"
    (table / "_delta_log").mkdir(parents=True)
    runs = [("r1", ["pass", "pass"]), ("r2", ["pass", "warn", "fail"])]  # r2 is the newest
    for version, (run, statuses) in enumerate(runs):
        name = f"part-{version}.parquet"
        when = [pa.scalar(1_795_000_000_000_000 + version, pa.timestamp("us"))] * len(statuses)
        pq.write_table(
            pa.table({"run_id": [run] * len(statuses), "status": statuses, "run_time": when}),
            table / name,
        )
        (table / "_delta_log" / f"{version:020d}.json").write_text(
            json.dumps({"commitInfo": {"operation": "WRITE"}})
            + "\n"
            + json.dumps({"add": {"path": name, "dataChange": True}})
        )
    got = _last_quality(str(table))
    assert got["quality_verdict"] == "fail"
    assert got["quality_checks"] == 3 and got["quality_failed"] == 2


def test_source_lag_shown_only_when_a_record_carries_it(client):
    http, root = client
    last = _log(root, "bucketed")[-1]
    logfile = root / "checkpoints" / "bucketed" / "_statekeeper" / "progress.jsonl"
    with open(logfile, "a") as fh:
        fh.write(json.dumps(dict(last, batchId=last["batchId"] + 1, lag={"kafka": 1200})) + "\n")
    rows = {r["job"]: r for r in http.get("/api/health").json()}
    assert rows["bucketed"]["lag"] == {"kafka": 1200} and rows["keyed"]["lag"] is None
    page = http.get("/").text
    assert page.count("data-field=lag") == 1 and "lag kafka: 1,200" in page


def test_a_checkpoint_locked_for_maintenance_shows_maintenance(client):
    from spark_jobs.contract.lock import JobLock

    http, root = client
    with JobLock(str(root / "checkpoints" / "keyed"), job="keyed", purpose="rollback"):
        rows = {r["job"]: r for r in http.get("/api/health").json()}
    assert rows["keyed"]["status"] == "maintenance"
    assert rows["keyed"]["reason"].startswith("rollback in progress")


def test_a_checkpoint_that_changes_under_every_look_has_no_verdict_not_a_500(client, monkeypatch):
    """validate gives up in one line when a running job's cleanup removes a file under each of
    its looks; the page shows no verdict for that job this refresh and every other row."""
    from spark_jobs.checkpoints import validate
    from spark_jobs.contract.errors import UserError

    http, root = client
    real = validate.validate_checkpoint

    def racing(checkpoint, spec=None, **kw):
        if checkpoint.endswith("keyed"):
            raise UserError(f"checkpoint {checkpoint} changed while it was validated; try again")
        return real(checkpoint, spec, **kw)

    monkeypatch.setattr(validate, "validate_checkpoint", racing)
    rows = {r["job"]: r for r in http.get("/api/health").json()}
    assert rows["keyed"]["checkpoint_verdict"] is None and rows["keyed"]["last_batch_id"] > 0
    assert rows["bucketed"]["checkpoint_verdict"] in ("clean", "warnings")
