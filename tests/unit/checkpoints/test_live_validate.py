"""``checkpoint validate`` (and the health page, which calls it) on a checkpoint a run is writing:
what one listing meets mid-batch or loses to Spark's cleanup is looked at again, never reported
as an error of the checkpoint; what every look finds still is."""

from __future__ import annotations

import errno
import time
from pathlib import Path

import pytest

from spark_jobs.checkpoints import validate as validate_mod
from spark_jobs.checkpoints.synthetic import LiveWriter, make_checkpoint
from spark_jobs.checkpoints.validate import LIVE_LOOKS, RACES, validate_checkpoint
from spark_jobs.cli import main as cli_main
from spark_jobs.contract.errors import UserError

pytestmark = pytest.mark.unit


@pytest.fixture
def ck(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("STATEKEEPER_CHECKPOINT_ROOTS", str(tmp_path))
    return tmp_path / "job"


def _counted_looks(monkeypatch, lose_first: int = 0) -> list[int]:
    """Count validate's listings; the first ``lose_first`` of them lose a file to cleanup."""
    real = validate_mod.read_layout
    looks: list[int] = []

    def read_layout(uri, **kw):
        looks.append(1)
        if len(looks) <= lose_first:
            gone = f"{uri}/sources/0/{len(looks)}"
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", gone)
        return real(uri, **kw)

    monkeypatch.setattr(validate_mod, "read_layout", read_layout)
    return looks


def test_a_running_checkpoint_shows_no_race_as_a_finding(ck, capsys):
    """A writer up to 20 batches a second, cleaning up behind 3: with one look, 3 to 6 % of
    validations reported a file gone (a traceback), a temp file or missing state."""
    raced: list[tuple[str, ...]] = []
    with LiveWriter(ck, retain=3, pause=0.05) as w:
        while w.committed < 5:
            time.sleep(0.01)
        deadline, looks = time.time() + 3, 0
        while time.time() < deadline or looks < 50:
            looks += 1
            rep = validate_checkpoint(str(ck))
            raced += [tuple(sorted(RACES.intersection(rep.codes)))] if rep.codes else []
        assert cli_main(["checkpoint", "validate", "--checkpoint", str(ck)]) == 0
        assert w.committed > 20
    assert not [r for r in raced if r], raced[:5]
    assert "clean" in capsys.readouterr().out


def test_a_look_that_loses_a_file_to_cleanup_looks_again(ck, monkeypatch):
    with LiveWriter(ck, retain=20, pause=0.2) as w:
        while w.committed < 3:
            time.sleep(0.05)
        looks = _counted_looks(monkeypatch, lose_first=2)
        rep = validate_checkpoint(str(ck))
    assert len(looks) == 3 and not rep.errors, rep.codes


def test_a_file_lost_in_every_look_is_one_line(ck, monkeypatch):
    with LiveWriter(ck, retain=20, pause=0.2) as w:
        while w.committed < 3:
            time.sleep(0.05)
        looks = _counted_looks(monkeypatch, lose_first=99)
        with pytest.raises(UserError, match=r"changed while it was validated \(.*sources/0/4 was"):
            validate_checkpoint(str(ck))
    assert len(looks) == LIVE_LOOKS


def test_a_real_gap_in_a_running_checkpoint_is_still_an_error(ck, monkeypatch):
    """The gap stays in every look (cleanup reaches it 50 batches later): reported, after
    LIVE_LOOKS looks."""
    with LiveWriter(ck, retain=50, pause=0.2) as w:
        while w.committed < 4:
            time.sleep(0.05)
        (ck / "offsets" / "2").unlink()
        looks = _counted_looks(monkeypatch)
        rep = validate_checkpoint(str(ck))
    assert "OFFSET_GAP" in [f.code for f in rep.errors] and len(looks) == LIVE_LOOKS


def test_a_stopped_checkpoint_is_looked_at_once(ck, monkeypatch):
    make_checkpoint(ck, batches=6, partitions=2)
    (ck / "offsets" / "2").unlink()
    looks = _counted_looks(monkeypatch)
    assert "OFFSET_GAP" in [f.code for f in validate_checkpoint(str(ck)).errors]
    assert len(looks) == 1
    looks = _counted_looks(monkeypatch, lose_first=1)  # nothing runs: a file gone is said at once
    assert cli_main(["checkpoint", "validate", "--checkpoint", str(ck)]) != 0
    assert len(looks) == 1
