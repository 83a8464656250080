"""Every command agrees on where a checkpoint may be (``python -m spark_jobs`` in a subprocess, as
a user types it): ``run --checkpoint P`` refuses exactly what ``checkpoint validate/inspect``
refuse, with the same line naming the variable that adds a root; a root added serves them all;
a positional path is the checkpoint; ``.data/...`` means the same folder to every command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]


def cli(tmp_path: Path, *args: str, roots: str | None = None) -> subprocess.CompletedProcess:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("STATEKEEPER_", "AIRFLOW_HOME"))
    }
    env.update(
        STATEKEEPER_HOME=str(ROOT),
        STATEKEEPER_DATA=str(tmp_path / "data"),
        PYTHONPATH=f"{ROOT}:{ROOT / 'plugins'}",
    )
    if roots is not None:
        env["STATEKEEPER_CHECKPOINT_ROOTS"] = roots
    return subprocess.run(
        [sys.executable, "-m", "spark_jobs", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _table_written_by_another_query(table: Path) -> None:
    (table / "_delta_log").mkdir(parents=True)
    txn = {"txn": {"appId": "another-query", "version": 7}}
    (table / "_delta_log" / f"{0:020d}.json").write_text(json.dumps(txn) + "\n")


def test_run_refuses_the_checkpoint_the_checkpoint_commands_refuse_with_the_same_line(tmp_path):
    ck = str(tmp_path / "elsewhere" / "ck")
    land = tmp_path / "data" / "landing" / "clickstream"  # under the roots, as the table is
    out = tmp_path / "data" / "tables" / "dedup_events"
    land.mkdir(parents=True)
    _table_written_by_another_query(out)
    run = ["run", "dedup_events", "--input", str(land), "--output", str(out)]
    answers = [
        cli(tmp_path, *run, "--checkpoint", ck),
        cli(tmp_path, "checkpoint", "validate", "--checkpoint", ck),
        cli(tmp_path, "checkpoint", "inspect", "--checkpoint", ck),
        cli(tmp_path, "checkpoint", "validate", ck),  # a positional path is the checkpoint
        cli(tmp_path, "checkpoint", "inspect", ck),
    ]
    lines = {a.stderr.strip() for a in answers}
    assert [a.returncode for a in answers] == [2] * 5 and len(lines) == 1, lines
    line = lines.pop()
    assert line.startswith(f"statekeeper: checkpoint {ck} is outside the checkpoints roots (")
    assert line.endswith("add its folder to $STATEKEEPER_CHECKPOINT_ROOTS")
    assert not (tmp_path / "elsewhere").exists()

    # With its folder added as a root, every command takes it: run gets as far as the guard
    # for new checkpoints on a table another query wrote (exit 4, nothing started).
    roots = str(tmp_path / "elsewhere")
    refused = cli(tmp_path, *run, "--checkpoint", ck, roots=roots)
    assert refused.returncode == 4 and "--new-checkpoint-for-existing-table" in refused.stderr
    by_option = cli(tmp_path, "checkpoint", "validate", "--checkpoint", ck, roots=roots)
    by_position = cli(tmp_path, "checkpoint", "validate", ck, roots=roots)
    assert by_option.returncode == by_position.returncode == 0, by_position.stderr
    assert (
        by_option.stdout == by_position.stdout == f"checkpoint {ck}: clean (does not exist yet)\n"
    )


def test_a_relative_data_path_is_the_same_folder_for_every_command(tmp_path):
    """``.data/...`` is under ``$STATEKEEPER_DATA`` for run and the checkpoint commands alike
    (not under the current directory); outside the roots, both refuse it alike."""
    (tmp_path / "data" / "checkpoints" / "x").mkdir(parents=True)
    got = cli(tmp_path, "checkpoint", "inspect", "--checkpoint", ".data/checkpoints/x", "--json")
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["checkpoint"] == str(tmp_path / "data" / "checkpoints" / "x")
    bad = ".data/tables/x"
    run = cli(tmp_path, "run", "sessions", "--checkpoint", bad)
    validate = cli(tmp_path, "checkpoint", "validate", bad)
    assert run.returncode == validate.returncode == 2
    assert run.stderr == validate.stderr and "outside the checkpoints roots" in run.stderr


def test_a_path_given_to_job_names_the_option_to_use(tmp_path):
    got = cli(tmp_path, "checkpoint", "validate", "--job", "/somewhere/ckpt")
    assert got.returncode == 2
    assert got.stderr.strip() == (
        "statekeeper: --job /somewhere/ckpt: give a job name; for a path use "
        "--checkpoint /somewhere/ckpt"
    )
    two = cli(tmp_path, "checkpoint", "validate", "/a/ck", "--checkpoint", "/b/ck")
    assert two.returncode == 2 and "two checkpoints named" in two.stderr
