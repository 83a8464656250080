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


def test_inspect_and_the_health_verdict_report_user_keys_not_buckets(tmp_path):
    """docs/contracts.md §4: the newest batch's ``keys`` reach ``checkpoint inspect`` and the
    verdict the supervisor acts on, beside Spark's state rows (256 buckets here, 1,000 users)."""
    from spark_jobs.checkpoints.inspect import inspect_checkpoint, render
    from spark_jobs.checkpoints.synthetic import make_checkpoint
    from statekeeper.health import Thresholds, assess

    ck = make_checkpoint(tmp_path / "ck", batches=3)
    records = [
        {
            "batchId": b,
            "numInputRows": 10,
            "stateOperators": [{"numRowsTotal": 256}],
            "keys": {"total": 1000 + b, "updated": 5, "removed": 1, "expired": b},
        }
        for b in range(3)
    ]
    for r in records:
        progress.append_line(progress.progress_path(str(ck)), r)
    info = inspect_checkpoint(str(ck))
    assert info["state_keys"] == {
        "batch": 2,
        "total": 1002,
        "updated": 5,
        "removed": 1,
        "expired": 2,
    }
    assert "state keys   1002 after batch 2" in render(info)
    h = assess(progress.read_progress(str(ck)), True, Thresholds())
    assert (h.state_keys, h.state_rows) == (1002, 256)
