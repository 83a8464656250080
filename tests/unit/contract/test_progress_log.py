"""The progress log stays bounded (rotated by size, read as one log across its files) and a long
batch's heartbeats keep a driver healthy, while a batch that runs past the limit is stalled."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "plugins"))

from spark_jobs.contract.progress_log import ProgressLog  # noqa: E402
from spark_jobs.runtime import progress  # noqa: E402
from statekeeper import driver  # noqa: E402
from statekeeper.health import Thresholds, assess  # noqa: E402

pytestmark = pytest.mark.unit


def test_the_log_is_rotated_by_size_and_readers_read_every_file(tmp_path, monkeypatch):
    monkeypatch.setenv(progress.MAX_BYTES_ENV, "2000")
    ckpt = str(tmp_path / "ckpt")
    target = progress.progress_path(ckpt)
    for i in range(60):  # ~100 bytes a line: ~6 KB in 2 KB files
        progress.append_line(target, {"name": "q", "batchId": i, "pad": "x" * 60})
    files = ProgressLog(ckpt).files()
    names = [f.name for f in files]
    assert names == [f"progress.jsonl.{n}" for n in range(len(files) - 1, 0, -1)] + [
        "progress.jsonl"
    ]
    assert len(files) >= 3
    assert all(f.stat().st_size <= 2000 for f in files)
    assert [r["batchId"] for r in progress.read_progress(ckpt)] == list(range(60))
    assert [r["batchId"] for r in driver.tail_progress(ckpt, n=40)] == list(range(20, 60))
    for i in range(60, 200):  # past KEEP_ROTATED files the oldest go: the log stays bounded
        progress.append_line(target, {"name": "q", "batchId": i, "pad": "x" * 60})
    files = ProgressLog(ckpt).files()
    assert len(files) == progress.KEEP_ROTATED + 1
    assert sum(f.stat().st_size for f in files) <= 2000 * (progress.KEEP_ROTATED + 1)
    kept = [r["batchId"] for r in progress.read_progress(ckpt)]
    assert kept == list(range(kept[0], 200)) and kept[0] > 0


def _rec(logged_at: float, **kw) -> dict:
    return {"statekeeper": {"job": "j", "logged_at": logged_at}, **kw}


def test_heartbeats_keep_a_long_batch_healthy_until_the_batch_limit():
    th = Thresholds(max_progress_age=300, max_batch_duration=1800)
    now = 10_000.0
    batch = _rec(now - 900, name="q", batchId=4, numInputRows=5)  # last batch ended 15 min ago
    beat = progress.heartbeat_record("q", "id", "run", "j", 870.0, now - 10)
    h = assess([batch, beat], True, th, now=now)
    assert h.verdict == "healthy" and "batch running for 870.0s" in h.reason, h
    assert h.batch_id == 4  # the batch checks read batch progress, not heartbeats
    hung = progress.heartbeat_record("q", "id", "run", "j", 1900.0, now - 10)
    h = assess([batch, hung], True, th, now=now)
    assert h.verdict == "stalled" and "max_batch_duration" in h.reason, h
    assert assess([batch], True, th, now=now).verdict == "stalled"  # no heartbeat: stalled
    assert not progress.is_batch(beat)
