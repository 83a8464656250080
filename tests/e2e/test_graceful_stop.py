"""A real continuous driver (``python -m spark_jobs run`` with a processing-time trigger) writes
heartbeats while its batches run and, stopped through the supervisor's ``stop`` (SIGTERM first),
finishes its batch, stops its queries and exits 0 with every started batch committed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spark_jobs.generate import generate
from spark_jobs.runtime import progress

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "plugins"))


def _batches(ckpt: Path, name: str) -> list[dict]:
    return [r for r in progress.read_progress(str(ckpt)) if r.get("name") == name]


def test_a_driver_heartbeats_and_stops_gracefully_on_sigterm(tmp_path):
    from statekeeper import driver

    land, ckpt = tmp_path / "land", tmp_path / "ckpt"
    generate("clickstream", str(land), 500, keys=20, seed=1)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        progress.HEARTBEAT_EVERY_ENV: "0.5",
        "STATEKEEPER_CHECKPOINT_ROOTS": str(tmp_path),
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "spark_jobs",
            "run",
            "windowed_counts",
            "--trigger",
            "processing-time:2s",
            "--input",
            str(land),
            "--output",
            str(tmp_path / "out"),
            "--checkpoint",
            str(ckpt),
            "--conf",
            "spark.sql.shuffle.partitions=2",
            "--conf",
            "spark.sql.streaming.noDataMicroBatches.enabled=false",
        ],
        cwd=ROOT,
        env=env,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.time() + 400  # a loaded machine is slow to start a JVM
        while not _batches(ckpt, "windowed_counts"):
            assert proc.poll() is None, proc.communicate()[1][-2000:]
            assert time.time() < deadline, "no batch in 400 s"
            time.sleep(1)
        generate("clickstream", str(land), 500, keys=20, seed=2)  # a second batch to run
        time.sleep(1)
        # The grace is generous: the runner waits for the running batch however long it takes.
        said = driver.stop(str(ckpt), {}, grace=400)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert said == f"stopped driver {proc.pid} (SIGTERM)", (said, err[-2000:])
    assert proc.returncode == 0, err[-2000:]
    assert "statekeeper: SIGTERM: stopping after the running batch" in err
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["extra"]["stopped_by"] == "SIGTERM" and summary["batches"] >= 1
    # every batch the query started is committed: none was cut short
    offsets = {p.name for p in (ckpt / "offsets").iterdir() if p.name.isdigit()}
    assert offsets and offsets == {p.name for p in (ckpt / "commits").iterdir() if p.name.isdigit()}
    # heartbeats were written while batches ran; batch readers never see them
    records = progress.read_progress(str(ckpt), idle=True)
    beats = [r for r in records if r.get("event") == progress.HEARTBEAT]
    assert beats and all(b["batch_running_seconds"] >= 0.5 for b in beats), records[-5:]
    assert all(progress.is_batch(r) for r in progress.read_progress(str(ckpt)))
