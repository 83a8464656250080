"""The event log is complete after a kill -9: SIGKILL a running ``python -m spark_jobs run``
whose log has not appended a single batch row yet, run it again, and the log holds exactly one
``batch`` row per committed batch (the killed run's re-derived from its progress records and the
checkpoint), with
the second run marked a ``restart`` that names what it recovered."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from spark_jobs.contract import events
from spark_jobs.generate import generate

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def cli(tmp: Path, **env: str) -> subprocess.Popen:
    specs = tmp / "specs"
    if not specs.exists():
        specs.mkdir()
        raw = yaml.safe_load((ROOT / "include" / "jobs" / "sessions.yaml").read_text())
        raw.update(max_files_per_trigger=1, shuffle_partitions=2)
        (specs / "sessions.yaml").write_text(yaml.safe_dump(raw))
    full = {
        **os.environ,
        "STATEKEEPER_SPECS": str(specs),
        "PYTHONPATH": str(ROOT),
        "STATEKEEPER_CHECKPOINT_ROOTS": str(tmp),
        "STATEKEEPER_DATA": str(tmp / "data"),
        **env,
    }
    args = [
        sys.executable,
        "-m",
        "spark_jobs",
        "run",
        "sessions",
        "--input",
        str(tmp / "land"),
        "--output",
        str(tmp / "out"),
        "--checkpoint",
        str(tmp / "ckpt"),
    ]
    return subprocess.Popen(
        args,
        cwd=ROOT,
        env=full,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def committed(tmp: Path) -> list[int]:
    folder = tmp / "ckpt" / "commits"
    return (
        sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit()) if folder.exists() else []
    )


def test_kill_9_then_rerun_leaves_one_batch_row_per_committed_batch(tmp_path, monkeypatch):
    for seed in range(4):
        generate("clickstream", str(tmp_path / "land"), 150, keys=15, seed=seed)
    # The victim would append its rows only at its end: every batch row is missing at the kill.
    victim = cli(tmp_path, STATEKEEPER_EVENTS_FLUSH_SECONDS="3600")
    deadline = time.time() + 600
    while len(committed(tmp_path)) < 2 and victim.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    assert victim.poll() is None, f"the run ended before the kill: {victim.communicate()[1][-500:]}"
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()
    killed = committed(tmp_path)
    monkeypatch.setenv("STATEKEEPER_DATA", str(tmp_path / "data"))
    assert 2 <= len(killed) < 5 and events.read(job="sessions", kind="batch") == []

    again = cli(tmp_path)
    _, err = again.communicate(timeout=900)
    assert again.returncode == 0, err[-800:]

    rows = events.read(job="sessions", kind="batch")
    assert sorted(r["batch_id"] for r in rows) == committed(tmp_path)
    assert len(committed(tmp_path)) > len(killed)
    by_batch = {r["batch_id"]: r for r in rows}
    # the last may have been killed between its commit and its progress line: files only then
    assert all(events.details(by_batch[b]).get("progress") for b in killed[:-1])
    assert by_batch[0]["output_version"] == 0  # the first batch created the output table
    (restart,) = events.read(job="sessions", kind="restart")
    assert events.details(restart)["recovered_batches"] == killed
