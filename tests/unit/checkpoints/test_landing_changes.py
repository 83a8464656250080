"""Landing files changed after their batch read them, from files alone: each entry's listed
modification time, the start of the batch's run (progress log) or else the first commit after its
log file, against the file now."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from spark_jobs.checkpoints.landing_changes import changed_after_read
from spark_jobs.checkpoints.layout import read_layout

pytestmark = pytest.mark.unit

T = 1_800_000_000.0  # the listing, in seconds; each step below is a minute later


def _at(path: Path, seconds: float, text: str | None = None) -> Path:
    if text is not None:
        path.write_text(text)
    os.utime(path, (seconds, seconds))
    return path


def _checkpoint(tmp_path: Path, committed: bool) -> tuple[Path, dict[str, Path]]:
    """Batch 0 planned at T + 60 listing three files as of T, committed at T + 120 (or not yet)."""
    land, ck = tmp_path / "land", tmp_path / "ck"
    land.mkdir()
    files = {n: land / f"{n}.json" for n in ("same", "before_commit", "after_commit")}
    for f in files.values():
        _at(f, T, "{}\n")
    (ck / "sources" / "0").mkdir(parents=True)
    entries = [
        json.dumps({"path": f"file://{f}", "timestamp": T * 1000, "batchId": 0})
        for f in files.values()
    ]
    _at(ck / "sources" / "0" / "0", T + 60, "\n".join(["v1", *entries]))
    (ck / "offsets").mkdir()
    (ck / "offsets" / "0").write_text("v1\n{}\n")
    (ck / "metadata").write_text('{"id": "q"}')
    if committed:
        (ck / "commits").mkdir()
        _at(ck / "commits" / "0", T + 120, "v1\n{}\n")
    _at(files["before_commit"], T + 90)  # a whole copy put in place before the batch re-ran
    _at(files["after_commit"], T + 180)  # appended to after the batch committed
    return ck, files


def test_only_a_file_changed_after_its_batch_committed_is_named(tmp_path):
    ck, files = _checkpoint(tmp_path, committed=True)
    assert changed_after_read(read_layout(str(ck), sizes=False)) == [str(files["after_commit"])]


def test_a_batch_not_committed_yet_names_nothing(tmp_path):
    ck, _ = _checkpoint(tmp_path, committed=False)
    assert changed_after_read(read_layout(str(ck), sizes=False)) == []


def test_a_file_gone_since_is_not_a_change(tmp_path):
    ck, files = _checkpoint(tmp_path, committed=True)
    files["after_commit"].unlink()
    assert changed_after_read(read_layout(str(ck), sizes=False)) == []


def _progress(ck: Path, started: float) -> None:
    """Batch 0's progress record: its run started at ``started`` and read log batch 0."""
    record = {
        "id": "q",
        "runId": "r",
        "name": "dedup_events",
        "batchId": 0,
        "timestamp": datetime.fromtimestamp(started, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "sources": [{"startOffset": None, "endOffset": {"logOffset": 0}}],
    }
    (ck / "_statekeeper").mkdir(exist_ok=True)
    (ck / "_statekeeper" / "progress.jsonl").write_text(json.dumps(record) + "\n")


def test_the_batch_runs_start_bounds_the_read_where_the_progress_log_has_it(tmp_path):
    """A file copied into place is listed half-written and finished while its batch runs: the
    batch read it up to the listed length, so a change after the run started counts; one
    made before the run (a whole copy put in place before a re-run) does not."""
    ck, files = _checkpoint(tmp_path, committed=True)
    _progress(ck, T + 80)  # the run that committed started after the listing, before the commit
    _at(files["before_commit"], T + 100)  # finished while the batch ran
    _at(files["same"], T + 70)  # a whole copy put in place before that run started
    got = changed_after_read(read_layout(str(ck), sizes=False))
    assert got == sorted([str(files["before_commit"]), str(files["after_commit"])])
