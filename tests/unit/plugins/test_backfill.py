"""A backfill's append is refused at plan time when the live job has read one of its files (no
JVM): the live checkpoint's file source log (Spark's format: ``v1``, then a JSON line per file,
the path a URL) names it; a folder of files it never read plans."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.unit


def test_append_of_a_file_the_live_job_read_is_refused_in_plan(tmp_path, monkeypatch):
    from spark_jobs.checkpoints.source_files import files_read
    from spark_jobs.contract.spec import load_spec
    from statekeeper.backfill import BadBackfillParams, plan_backfill

    monkeypatch.setenv("STATEKEEPER_DATA", str(tmp_path / "data"))
    land = tmp_path / "data" / "landing" / "clickstream"
    land.mkdir(parents=True)
    (land / "read by live.json").write_text("{}\n")
    (land / "new.json").write_text("{}\n")
    log = tmp_path / "data" / "checkpoints" / "windowed_counts" / "sources" / "0"
    log.mkdir(parents=True)
    entry = {"path": (land / "read by live.json").as_uri(), "timestamp": 1, "batchId": 0}
    (log / "0").write_text("v1\n" + json.dumps(entry))
    (log / ".0.crc").write_bytes(b"crc")  # Hadoop's checksum beside it: not a log file
    assert files_read(str(log.parents[1])) == {str(land / "read by live.json")}

    params = {"job": "windowed_counts", "input": str(land), "mode": "append"}
    with pytest.raises(BadBackfillParams, match=r"^mode: append would count twice .*read by live"):
        plan_backfill(params, tmp_path / "data")
    assert plan_backfill({**params, "mode": "replace"}, tmp_path / "data")["files"] == 2
    (land / "read by live.json").unlink()
    plan = plan_backfill(params, tmp_path / "data")
    assert plan["files"] == 1 and load_spec("windowed_counts").checkpoint.startswith(
        str(tmp_path / "data")
    )
