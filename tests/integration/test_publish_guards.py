"""``publish`` next to the live job, on real runs (windowed_counts, HDFS state): it holds the
live checkpoint's lock (a publish during a run, restore or rollback is refused, nothing written),
and ``append`` refuses a backfill that read files the live job already read, even copied elsewhere
(their rows are in the live table; appending them counts them twice); a backfill of files the live job never read
is published."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from jobkit import CLICK_TYPES, write_hour

from spark_jobs.cli import main as cli_main
from spark_jobs.contract import delta
from spark_jobs.contract.blocks import Snapshots
from spark_jobs.contract.errors import ExitCode
from spark_jobs.contract.lock import JobLock
from spark_jobs.contract.spec import load_spec
from spark_jobs.jobs.runner import run_job

pytestmark = pytest.mark.integration

JOB = "windowed_counts"
TYPES = CLICK_TYPES


def write_part(land: Path, part: int) -> None:
    write_hour(land, part, bad_lines=False)


def spec_for(land: Path, output: Path, checkpoint: Path | None = None):
    """The job on ``land`` into ``output``; the spec's own checkpoint unless one is given."""
    spec = load_spec(JOB).with_overrides(
        input=str(land),
        output=str(output),
        checkpoint=str(checkpoint) if checkpoint else None,
        trigger="available-now",
    )
    return replace(spec, state_store="hdfs", shuffle_partitions=2, snapshots=Snapshots())


def test_publish_holds_the_live_lock_and_append_refuses_files_the_live_job_read(
    spark, tmp_path, monkeypatch, capsys
):
    data = tmp_path / "data"
    monkeypatch.setenv("STATEKEEPER_DATA", str(data))
    live = spec_for(data / "landing" / "live", data / "tables" / "live")  # the spec's checkpoint
    for part in range(2):
        write_part(data / "landing" / "live", part)
    run_job(live, spark=spark)
    version = delta.version(live.output)

    def backfill(key: str, land: Path) -> tuple[str, str]:
        root = data / "backfill" / JOB / key
        staged = spec_for(land, root / "table", root / "checkpoint")
        run_job(staged, spark=spark)
        return staged.output, staged.checkpoint

    # 1. a backfill over a copy of the live landing folder (as a restore from an archive makes):
    # every file of it the live job has read, under another path
    shutil.copytree(data / "landing" / "live", data / "landing" / "copy")
    table, ck = backfill("again", data / "landing" / "copy")
    common = ["publish", JOB, "--staged", table, "--output", live.output]

    # while the live job's lock is held (a run, a restore, a rollback): refused, nothing written
    with JobLock(live.checkpoint, job=JOB, purpose="restore"):
        capsys.readouterr()
        assert cli_main([*common, "--mode", "replace", "--key", "k0"]) == ExitCode.LOCK_HELD
    assert "in use by restore" in capsys.readouterr().err
    assert delta.version(live.output) == version

    # append of files the live job read: refused in one line naming a file, nothing written
    capsys.readouterr()
    append = [*common, "--mode", "append", "--staged-checkpoint", ck]
    assert cli_main([*append, "--key", "k1"]) == ExitCode.UNSAFE
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "part00.json" in err and "twice" in err
    assert delta.version(live.output) == version
    assert cli_main([*common, "--mode", "append", "--key", "k1"]) == ExitCode.USER_ERROR
    assert "--staged-checkpoint" in capsys.readouterr().err  # append always checks its files

    # 2. a backfill of files the live job never read: published, once
    for part in (2, 3):
        write_part(data / "landing" / "late", part)
    table, ck = backfill("late", data / "landing" / "late")
    late = ["publish", JOB, "--staged", table, "--output", live.output, "--staged-checkpoint", ck]
    capsys.readouterr()
    assert cli_main([*late, "--mode", "append", "--key", "k2"]) == 0
    assert json.loads(capsys.readouterr().out)["published"] is True
    assert delta.version(live.output) == version + 1
