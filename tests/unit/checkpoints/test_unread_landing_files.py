"""Landing files the job never read, from files alone: the landing folder against the file
source's log (compact file and the deltas after it), reported by ``checkpoint validate``."""

from __future__ import annotations

import json
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from spark_jobs.checkpoints import landing_codecs, unread
from spark_jobs.checkpoints.synthetic import ROCKSDB, offset_text
from spark_jobs.checkpoints.validate import validate_checkpoint
from spark_jobs.contract.spec import load_spec

pytestmark = pytest.mark.unit


def _log(path: Path, files: list[Path], batch: int) -> None:
    """A source-log file as Spark writes it: v1, then one entry per file read."""
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = [
        json.dumps({"path": "file://" + quote(str(f)), "timestamp": 0, "batchId": batch})
        for f in files
    ]
    path.write_text("\n".join(["v1", *entries]))


def _checkpoint(tmp_path: Path, batch_time_ms: int) -> tuple[Path, Path, Path]:
    land, ck = tmp_path / "land", tmp_path / "ck"
    land.mkdir()
    read_a, read_c, missed = land / "a.json", land / "c d.json", land / "b.json"
    for f in (read_a, read_c, missed, land / "_SUCCESS", land / ".b.json.tmp"):
        f.write_text('{"x": 1}\n')
    (ck / "offsets").mkdir(parents=True)
    (ck / "metadata").write_text('{"id": "q"}')
    (ck / "offsets" / "10").write_text(offset_text(10, 2, ROCKSDB, batch_time_ms - 600_000, 60_000))
    # The compact file repeats every earlier entry; a delta older than it is already in it.
    _log(ck / "sources" / "0" / "9.compact", [read_a], 9)
    _log(ck / "sources" / "0" / "10", [read_c], 10)
    _log(ck / "sources" / "0" / "8", [], 8)
    return land, ck, missed


def test_validate_counts_a_landing_file_the_job_did_not_read(tmp_path):
    # the newest batch was planned two minutes after these files landed
    land, ck, missed = _checkpoint(tmp_path, int(time.time() * 1000) + 120_000)
    spec = load_spec("dedup_events").with_overrides(input=str(land), checkpoint=str(ck))

    found = unread.unread(str(ck), spec.inputs.values())
    assert found is not None and found.files == [str(missed)]
    assert unread.count(str(ck), spec.inputs.values()) == 1
    report = validate_checkpoint(str(ck), spec)
    [finding] = [f for f in report.findings if f.code == "LANDING_FILES_UNREAD"]
    assert finding.severity == "warning"
    assert "1 landing file(s)" in finding.message and "b.json" in finding.message


def test_the_count_lists_again_when_a_log_goes_under_it(tmp_path, monkeypatch):
    """The health page counts a running job's unread files: a source log listed and then gone
    (Spark's cleanup) before its read is listed again, not a traceback on the page."""
    land, ck, _ = _checkpoint(tmp_path, int(time.time() * 1000) + 120_000)
    spec = load_spec("dedup_events").with_overrides(input=str(land), checkpoint=str(ck))
    real, lost = unread.read_text, []

    def read_text(uri, rel, gone_every_time=False):
        if gone_every_time or not lost:
            lost.append(rel)
            raise FileNotFoundError(2, "No such file or directory", f"{uri}/{rel}")
        return real(uri, rel)

    monkeypatch.setattr(unread, "read_text", read_text)
    assert unread.count(str(ck), spec.inputs.values()) == 1 and len(lost) == 1
    monkeypatch.setattr(unread, "read_text", lambda u, r: read_text(u, r, gone_every_time=True))
    assert unread.count(str(ck), spec.inputs.values()) == 0  # gone at every look: cannot say


def test_a_file_that_landed_after_the_newest_batch_is_pending_not_unread(tmp_path):
    land, ck, _ = _checkpoint(tmp_path, int(time.time() * 1000))
    spec = load_spec("dedup_events").with_overrides(input=str(land), checkpoint=str(ck))

    assert unread.unread(str(ck), spec.inputs.values()) is None
    assert "LANDING_FILES_UNREAD" not in validate_checkpoint(str(ck), spec).codes


def test_a_backlog_being_read_under_the_batch_limit_is_pending_not_unread(tmp_path):
    """The newest batch read as many files as the job's limit: the files not read yet wait
    for the next batches."""
    land, ck, _ = _checkpoint(tmp_path, int(time.time() * 1000) + 120_000)
    inputs = [str(land)]

    assert unread.unread(str(ck), inputs, files_per_batch=1) is None  # batch 10 read 1 file
    assert unread.count(str(ck), inputs, files_per_batch=2) == 1


def _landing_with_strays(land: Path) -> None:
    (land / "sub.json").mkdir(parents=True)
    (land / "sub.json" / "inner.json").write_text('{"x": 1}\n')
    for name in ("a.json", "b.json.gz", "c.jsonl", "events.ndjson", "readme.txt", "A.JSON"):
        (land / name).write_text('{"x": 1}\n')
    for hidden in ("_SUCCESS", ".d.json.tmp"):
        (land / hidden).write_text("")


def test_what_a_landing_folder_holds_that_no_batch_will_read(tmp_path):
    """The file source reads the folder's own files named *.json* (case counts) and skips
    hidden names; a subfolder and any other name are never read, however many batches run."""
    _landing_with_strays(tmp_path / "land")
    got = unread.never_read(str(tmp_path / "land"))
    assert got == ["A.JSON", "events.ndjson", "readme.txt", "sub.json/"]
    assert unread.never_read(str(tmp_path / "nowhere")) == []


def test_a_run_says_before_spark_starts_what_it_will_never_read(tmp_path, monkeypatch, capsys):
    """``run``'s precheck names them on stderr in one line (a folder of .ndjson files would
    otherwise run green with nothing read), and says nothing of a folder it reads whole."""
    from spark_jobs.jobs import runner

    for var in ("CHECKPOINT", "LANDING", "TABLE"):
        monkeypatch.setenv(f"STATEKEEPER_{var}_ROOTS", str(tmp_path))
    land = tmp_path / "land"
    _landing_with_strays(land)
    for i in range(3):
        (land / f"more{i}.txt").write_text("")
    spec = load_spec("user_counts").with_overrides(
        input=str(land), output=str(tmp_path / "out"), checkpoint=str(tmp_path / "ck")
    )
    runner.precheck(spec)
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "never reads" in ln]
    assert len(lines) == 1
    assert "never reads 7 entries of landing folder" in lines[0]
    assert "A.JSON, events.ndjson, more0.txt and 4 more" in lines[0]
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "a.json").write_text('{"x": 1}\n')
    runner.precheck(spec.with_overrides(input=str(clean), checkpoint=str(tmp_path / "ck2")))
    assert "never reads" not in capsys.readouterr().err


def test_pending_bytes_are_the_readable_files_no_source_log_names(tmp_path):
    from spark_jobs.checkpoints.layout import read_layout

    land, ck, missed = _checkpoint(tmp_path, int(time.time() * 1000))
    (land / "sub").mkdir()
    (land / "sub" / "x.json").write_text("{}\n" * 50)  # a subfolder: the source never reads it
    (land / "notes.txt").write_text("x" * 50)  # not named *.json*
    lay = read_layout(str(ck), sizes=False)
    # read a.json and "c d.json" are logged; _SUCCESS and the temp file are Spark's names
    assert unread.pending_bytes([str(land)], lay) == missed.stat().st_size
    gz = land / "e.json.gz"
    gz.write_bytes(b"z" * 10)
    expected = missed.stat().st_size + 10 * unread.COMPRESSED_TEXT  # the text it holds
    assert unread.pending_bytes([str(land)], lay) == expected
    empty = read_layout(str(tmp_path / "fresh"), sizes=False)  # a new checkpoint reads it all
    assert unread.pending_bytes([str(land)], empty) == expected + 2 * len('{"x": 1}\n')
    # a topic's backlog is the broker's to say
    assert unread.pending_bytes([str(land), "kafka://localhost:9092/t"], lay) is None


def test_a_run_with_little_to_read_starts_its_driver_with_the_quick_compiler(tmp_path, monkeypatch):
    from spark_jobs.contract import jvm
    from spark_jobs.jobs import runner

    for var in ("CHECKPOINT", "LANDING", "TABLE"):
        monkeypatch.setenv(f"STATEKEEPER_{var}_ROOTS", str(tmp_path))
    land = tmp_path / "land"
    land.mkdir()
    (land / "a.json").write_text('{"x": 1}\n' * 100)
    spec = load_spec("user_counts").with_overrides(
        input=str(land), output=str(tmp_path / "out"), checkpoint=str(tmp_path / "ck")
    )
    layout = runner.precheck(spec)
    assert runner.quick_compiler(spec, layout)
    continuous = spec.with_overrides(trigger="processing-time:5s")
    assert not runner.quick_compiler(continuous, layout)
    monkeypatch.setattr(jvm, "QUICK_MAX_BYTES", 100)  # the folder now holds more than that
    assert not runner.quick_compiler(spec, layout)


def test_a_run_says_which_files_it_reads_as_text_though_they_are_compressed(
    tmp_path, monkeypatch, capsys
):
    """Hadoop decodes .gz, .bz2, .zst and .deflate (.lz4 and .snappy in its own framing only:
    test_landing_codecs); a .json.xz or .json.zip is read as text, its bytes quarantined line
    by line: the precheck names such files first."""
    from spark_jobs.jobs import runner

    for var in ("CHECKPOINT", "LANDING", "TABLE"):
        monkeypatch.setenv(f"STATEKEEPER_{var}_ROOTS", str(tmp_path))
    land = tmp_path / "land"
    land.mkdir()
    for name in ("a.json", "b.json.gz", "c.json.bz2", "d.json.zst", "e.json.xz", "f.json.ZIP"):
        (land / name).write_bytes(b"\xfd7zXZ\x00")
    (land / ".g.json.xz").write_bytes(b"")  # hidden: never read at all
    assert landing_codecs.read_as_text(str(land)) == ["e.json.xz", "f.json.ZIP"]
    spec = load_spec("user_counts").with_overrides(
        input=str(land), output=str(tmp_path / "out"), checkpoint=str(tmp_path / "ck")
    )
    runner.precheck(spec)
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "as plain text" in ln]
    assert len(lines) == 1, lines
    assert "reads 2 file(s) of landing folder" in lines[0] and "e.json.xz, f.json.ZIP (" in lines[0]


def test_only_a_folder_the_checkpoint_read_files_of_is_held_to_its_path(tmp_path):
    """:mod:`spark_jobs.checkpoints.moved_inputs`: another folder than the recorded one is
    refused while the source logs name files of the recorded one, under any other spelling (a
    link is another path to Spark); a folder never read from, or a topic, may change."""
    from spark_jobs.checkpoints.layout import read_layout
    from spark_jobs.checkpoints.moved_inputs import moved_inputs, refuse_moved_inputs
    from spark_jobs.contract.errors import UserError

    land, ck, _ = _checkpoint(tmp_path, int(time.time() * 1000))
    lay = read_layout(str(ck), sizes=False)
    here = {"clickstream": str(land)}
    assert moved_inputs(lay, here, here) == []
    same = {"clickstream": f"{tmp_path}/x/../land/"}  # Spark's paths drop ".." and a last "/"
    assert moved_inputs(lay, here, same) == [] and moved_inputs(lay, same, here) == []
    assert moved_inputs(lay, None, {"clickstream": "/else"}) == []  # nothing recorded (yet)
    [moved] = moved_inputs(lay, here, {"clickstream": str(tmp_path / "copy")})
    assert (moved.kind, moved.read_from, moved.files) == ("clickstream", str(land), 2)
    with pytest.raises(UserError) as refused:
        refuse_moved_inputs(str(ck), lay, here, {"clickstream": str(tmp_path / "copy")})
    assert refused.value.exit_code == 4 and "read 2 file(s) of landing folder" in str(refused.value)
    # a sibling whose name starts the same is another folder, not the one read
    assert moved_inputs(lay, {"clickstream": str(land) + "2"}, here) == []
    assert moved_inputs(lay, here, {"clickstream": "kafka://127.0.0.1:9092/clicks"}) == []
