"""``python -m bench.upgrade_migrate`` at a tiny scale, in its own process: the rebuild holds
every user in state, ``upgrade migrate`` (RocksDB -> HDFS-backed store) keeps every one of them
in the batched executor's buckets (also after the next run, which reads nothing again), and the
figures and the ratio are printed and written.

The bench's second arm (the watermark 10 -> 5 minutes, ``--no-watermark`` leaves it out) runs
the same steps with another spec edit; the migration itself, state and timers kept, is proven
in tests/integration/test_upgrade_migrate.py. Here it cost four more whole commands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def test_bench_upgrade_migrate_keeps_every_user(tmp_path):
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'plugins'}", "STATEKEEPER_HOME": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "bench.upgrade_migrate", "--smoke", "--users", "300"]
        + ["--events", "320", "--no-watermark", "--work", str(tmp_path / "bench")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,  # a hang guard, not a speed test
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ratio = rebuild / migrate" in done.stdout, done.stdout
    result = json.loads((ROOT / "bench" / "results" / "upgrade_migrate-smoke.json").read_text())
    assert (result["users"], result["events"], result["events_read"]) == (300, 320, 320)
    # the run after the migration reads no event again, and every user is in state after the
    # rebuild and still is after the migration and a run
    assert result["users_in_state_rebuilt"] == 300
    assert "migrate_watermark" not in result
    assert result["migrate_events_read_after_next_run"] == 320
    assert result["migrate_users_in_state"] == 300
    assert 0 < result["migrate_state_rows_rewritten"] <= 256  # buckets (params.buckets)
    assert result["migrate"]["median_s"] > 0 and result["migrate"]["ratio_rebuild_vs_this"] > 0
