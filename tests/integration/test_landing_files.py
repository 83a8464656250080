"""Every landed file is read, whatever its modification time (docs/jobs.md, "Landing files"):
Spark's file source once forgot files more than 7 days older than the newest it had seen, so a file
copied with its mtime (cp -p, rsync -t, tar x) was skipped for ever, silently."""

from __future__ import annotations

import os
import time

import pytest
from jobkit import at, job_spec, write_lines

from spark_jobs.checkpoints.validate import validate_checkpoint
from spark_jobs.jobs.runner import run_job

pytestmark = pytest.mark.integration

DAY = 86400


def _events(prefix: str, minutes: range) -> list[dict]:
    return [
        {
            "event_id": f"{prefix}{m}",
            "user_id": "u1",
            "event_type": "page_view",
            "page": "/a",
            "duration_sec": 1,
            "event_time": at(m),
        }
        for m in minutes
    ]


def test_files_with_an_old_modification_time_are_read_by_the_next_run(spark, tmp_path):
    spec = job_spec("dedup_events", tmp_path)
    folder = tmp_path / "land" / "clickstream"
    write_lines(folder, "new.json", _events("n", range(0, 3)))
    assert run_job(spec, spark=spark).input_rows == 3

    # Landed after the newer file, carrying modification times a month old.
    month_ago = time.time() - 30 * DAY
    for name, minutes in (("old-1.json", range(3, 6)), ("old-2.json", range(6, 8))):
        os.utime(write_lines(folder, name, _events(name[:5], minutes)), (month_ago, month_ago))
    second = run_job(spec, spark=spark)

    assert second.input_rows == 5
    assert spark.read.format("delta").load(str(tmp_path / "out")).count() == 8
    assert "LANDING_FILES_UNREAD" not in validate_checkpoint(spec.checkpoint, spec).codes
