"""What the runner reads from a checkpoint for the parse's "ahead of the clock" check
(:func:`spark_jobs.jobs.runner.clock_marks`): the newest admitted event time, and the clock of a
batch that will run again, when it is earlier than now."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from spark_jobs.jobs.runner import clock_marks

pytestmark = pytest.mark.unit

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS


def _spec(tmp_path: Path, clock_ms: int, watermark_ms: int, committed: bool) -> SimpleNamespace:
    """A checkpoint whose batch 1 was planned at ``clock_ms`` (and committed, or not yet)."""
    ck = tmp_path / "ck"
    (ck / "offsets").mkdir(parents=True)
    (ck / "commits").mkdir()
    for batch in (0, 1):
        meta = {"batchWatermarkMs": watermark_ms, "batchTimestampMs": clock_ms + batch}
        (ck / "offsets" / str(batch)).write_text(f"v1\n{json.dumps(meta)}\n{{}}\n")
    (ck / "commits" / "0").write_text("v1\n{}\n")
    if committed:
        (ck / "commits" / "1").write_text("v1\n{}\n")
    return SimpleNamespace(checkpoint=str(ck), watermark_seconds=3600)


def test_a_batch_run_again_brings_its_own_earlier_clock(tmp_path):
    planned = int(time.time() * 1000) - 3 * DAY_MS
    spec = _spec(tmp_path, planned - 1, planned - 2 * HOUR_MS, committed=False)
    assert clock_marks(spec) == (planned - HOUR_MS, planned)


def test_a_committed_batch_leaves_the_clock_to_now(tmp_path):
    planned = int(time.time() * 1000) - 3 * DAY_MS
    spec = _spec(tmp_path, planned - 1, planned - 2 * HOUR_MS, committed=True)
    assert clock_marks(spec) == (planned - HOUR_MS, None)


def test_a_fresh_checkpoint_has_neither(tmp_path):
    spec = SimpleNamespace(checkpoint=str(tmp_path / "new"), watermark_seconds=3600)
    assert clock_marks(spec) == (None, None)
