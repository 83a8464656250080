"""The progress log: a batch's key metrics land in its record; a bad byte spoils one line only."""

import json

import pytest

from spark_jobs.runtime import progress

pytestmark = pytest.mark.unit


def test_listener_puts_the_batch_key_metrics_in_its_record(tmp_path):
    listener = progress.make_listener("job", {"job": str(tmp_path)})
    progress.put_keys("job", 4, {"total": 17, "updated": 3})

    class Progress:  # the one attribute the listener reads of Spark's progress event
        json = json.dumps({"name": "job", "batchId": 4, "runId": "r"})

    class Event:
        progress = Progress()

    listener.onQueryProgress(Event())
    listener.onQueryProgress(Event())  # same batch again (no metrics left): no "keys"
    first, second = progress.read_progress(str(tmp_path))
    assert first["keys"] == {"total": 17, "updated": 3}
    assert "keys" not in second


def test_a_bad_byte_in_the_progress_log_spoils_one_line_only(tmp_path):
    log = tmp_path / "_statekeeper" / "progress.jsonl"
    log.parent.mkdir()
    log.write_bytes(b'{"batchId": 0}\n{"batchId": 1, "x": "\xff"}\n\xfe\xff\n{"batchId": 2}\n')
    assert [r["batchId"] for r in progress.read_progress(str(tmp_path))] == [0, 1, 2]
