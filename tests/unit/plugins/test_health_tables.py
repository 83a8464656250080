"""The health API and page show each job's tables as readers find them: live files and average
file size of the output and quarantine (read with delta-rs), and when ``table maintain`` last
finished (its record under the checkpoint's ``_statekeeper``)."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from bench.synthetic_progress import write_history
from spark_jobs.contract import delta, maintenance

pytestmark = pytest.mark.unit


def test_table_files_and_last_maintenance(tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    from statekeeper.health_app import create_app

    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "keyed.yaml").write_text(
        f"name: keyed\ninputs: {{clickstream: {tmp_path}/landing}}\n"
        f"output: {tmp_path}/tables/keyed\ncheckpoint: {tmp_path}/checkpoints/keyed\n"
        "watermark: 10 minutes\n"
    )
    monkeypatch.setenv("STATEKEEPER_SPECS", str(specs))
    ck = tmp_path / "checkpoints" / "keyed"
    write_history(ck, "keyed", 30, time.time() - 60, seed=1)
    table = tmp_path / "tables" / "keyed"
    for n in (10, 20, 30):
        write_deltalake(str(table), pa.table({"k": list(range(n))}), mode="append")
    client = TestClient(create_app(auth=False))

    row = client.get("/api/health").json()[0]
    stats = delta.live_files(str(table))
    assert stats is not None and stats.files == 3
    assert row["table_files"] == 3 and row["table_average_file_bytes"] == stats.bytes // 3
    assert row["quarantine_files"] is None and row["last_maintenance_at"] is None
    assert "maintained never" in client.get("/").text

    maintenance.write(str(ck), "2026-11-25T21:00:00Z", 12.5, {"job": "keyed", "tables": []})
    write_deltalake(str(table), pa.table({"k": [1]}), mode="append")
    row = client.get("/api/health").json()[0]
    assert row["last_maintenance_at"] == "2026-11-25T21:00:00Z"
    assert row["table_files"] == 4  # a new commit is read again
    assert "2026-11-25 21:00 UTC" in client.get("/").text
