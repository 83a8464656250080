"""Every landed file is read, whatever its modification time (docs/jobs.md, "Landing files"):
Spark's file source once forgot files more than 7 days older than the newest it had seen, so a file
copied with its mtime (cp -p, rsync -t, tar x) was skipped for ever, silently. A file Spark cannot
read (a truncated ``.json.gz``) fails its batch with one line naming it; the batch is re-run from
its plan, so a whole copy at that path is read, and a file moved away is said to be skipped."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import time

import pytest
from compressed_frames import lz4_frame
from jobkit import at, job_spec, write_lines

from spark_jobs.checkpoints.validate import validate_checkpoint
from spark_jobs.contract.errors import JobFailed, UserError
from spark_jobs.jobs.runner import run_job

pytestmark = pytest.mark.integration

DAY = 86400


def _events(prefix: str, minutes: range) -> list[dict]:
    return [
        {
            "event_id": f"{prefix}{m}",
            "user_id": "u1",
            "event_type": "page_view",
            "page": "/a",
            "duration_sec": 1,
            "event_time": at(m),
        }
        for m in minutes
    ]


def test_files_with_an_old_modification_time_are_read_by_the_next_run(spark, tmp_path):
    spec = job_spec("dedup_events", tmp_path)
    folder = tmp_path / "land" / "clickstream"
    write_lines(folder, "new.json", _events("n", range(0, 3)))
    assert run_job(spec, spark=spark).input_rows == 3

    # Landed after the newer file, carrying modification times a month old.
    month_ago = time.time() - 30 * DAY
    for name, minutes in (("old-1.json", range(3, 6)), ("old-2.json", range(6, 8))):
        os.utime(write_lines(folder, name, _events(name[:5], minutes)), (month_ago, month_ago))
    second = run_job(spec, spark=spark)

    assert second.input_rows == 5
    assert spark.read.format("delta").load(str(tmp_path / "out")).count() == 8
    assert "LANDING_FILES_UNREAD" not in validate_checkpoint(spec.checkpoint, spec).codes


def _gzipped(folder, name: str, events: list[dict], cut: int | None = None):
    """``events`` as a gzipped landing file, its first ``cut`` bytes only (a truncated upload)."""
    data = gzip.compress(("\n".join(json.dumps(e) for e in events) + "\n").encode())
    path = folder / name
    path.write_bytes(data[:cut])
    return path


def _rows(spark, tmp_path) -> int:
    return spark.read.format("delta").load(str(tmp_path / "out")).count()


WHOLE = _events("z", range(5, 9))  # the gzipped file's events


def _failed_batch(spark, tmp_path):
    """A run reads a.json; the next batch holds b.json and a truncated z.json.gz, and fails with
    one line naming it. Returns the spec, the landing folder and the broken file."""
    spec = job_spec("dedup_events", tmp_path)
    folder = tmp_path / "land" / "clickstream"
    write_lines(folder, "a.json", _events("a", range(0, 3)))
    assert run_job(spec, spark=spark).input_rows == 3
    write_lines(folder, "b.json", _events("b", range(3, 5)))
    broken = _gzipped(folder, "z.json.gz", WHOLE, cut=60)
    with pytest.raises(JobFailed) as failed:
        run_job(spec, spark=spark)
    line = str(failed.value)
    assert "\n" not in line and f"cannot read landing file {broken} (EOFException" in line, line
    assert "nothing is lost" in line and "whole copy at that path" in line, line
    assert _rows(spark, tmp_path) == 3  # nothing of the failed batch was written
    return spec, folder, broken


def test_a_truncated_gzip_fails_its_batch_and_a_whole_copy_in_its_place_is_read(spark, tmp_path):
    spec, folder, _ = _failed_batch(spark, tmp_path)

    _gzipped(folder, "z.json.gz", WHOLE)  # the upload, completed under the same name
    assert run_job(spec, spark=spark).input_rows == 6
    assert _rows(spark, tmp_path) == 9
    codes = validate_checkpoint(spec.checkpoint, spec).codes
    assert not {"LANDING_FILES_UNREAD", "LANDING_FILES_CHANGED"} & set(codes)  # read whole


def test_a_truncated_gzip_moved_away_is_said_to_be_skipped(spark, tmp_path, capsys):
    spec, folder, broken = _failed_batch(spark, tmp_path)

    shutil.move(broken, tmp_path / "z.json.gz")  # out of the landing folder
    capsys.readouterr()
    assert run_job(spec, spark=spark).input_rows == 2  # the batch, re-run without it
    said = capsys.readouterr().err
    assert f"without 1 landing file(s) it planned to read and that are gone since: {broken}" in (
        said
    ), said
    # Its name now counts as read: its lines come in under a new name.
    _gzipped(folder, "z-again.json.gz", WHOLE)
    assert run_job(spec, spark=spark).input_rows == 4
    assert _rows(spark, tmp_path) == 9


def test_lines_appended_to_a_file_after_its_batch_are_reported_not_lost_in_silence(
    spark, tmp_path, capsys
):
    """The file source reads each name once: what a producer appends to a file after its batch
    committed is never read. The next run and ``checkpoint validate`` say which file."""
    spec = job_spec("dedup_events", tmp_path)
    folder = tmp_path / "land" / "clickstream"
    grown = write_lines(folder, "grows.json", _events("a", range(0, 3)))
    assert run_job(spec, spark=spark).input_rows == 3
    assert "LANDING_FILES_CHANGED" not in validate_checkpoint(spec.checkpoint, spec).codes

    time.sleep(0.05)  # past the commit's modification time on any clock granularity
    with grown.open("a") as out:
        out.write("\n".join(json.dumps(e) for e in _events("b", range(3, 5))) + "\n")
    capsys.readouterr()
    assert run_job(spec, spark=spark).input_rows == 0  # Spark's rule: the name was read
    said = capsys.readouterr().err
    assert f"1 landing file(s) changed after their batch read them: {grown}" in said
    report = validate_checkpoint(spec.checkpoint, spec)
    assert report.codes == ["LANDING_FILES_CHANGED"], report.codes


# Spark reading an LZ4 frame, in a JVM of its own: Hadoop's codec takes the frame's first bytes
# for block lengths, so it reads no lines, or dies allocating a buffer of the size they seem to
# name (the shared test JVM did, and every test after it failed).
READ_FRAME = """
import sys
from spark_jobs.runtime.session import build_session
print("lines", build_session("read-frame").read.text(sys.argv[1]).count())
"""


def test_spark_reads_none_of_an_lz4_frames_lines(tmp_path):
    frame = tmp_path / "z.json.lz4"
    frame.write_bytes(lz4_frame(("\n".join(json.dumps(e) for e in WHOLE) + "\n").encode()))
    done = subprocess.run(
        [sys.executable, "-c", READ_FRAME, str(frame)], capture_output=True, text=True, timeout=300
    )
    read = [ln for ln in done.stdout.splitlines() if ln.startswith("lines ")]
    assert read == ["lines 0"] or (done.returncode != 0 and not read), (read, done.returncode)


def test_an_lz4_frame_is_refused_before_spark_reads_it(spark, tmp_path):
    """The run refuses an LZ4 frame (what the lz4 tool writes) unread, while an .lz4 of Spark's
    own writer (Hadoop's framing) is read whole; moved out and landed again as .json.gz, every
    line is read."""
    lines = ("\n".join(json.dumps(e) for e in WHOLE) + "\n").encode()
    hadoop = tmp_path / "hadoop"
    rows = [(ln,) for ln in lines.decode().splitlines()]
    spark.createDataFrame(rows, "value string").coalesce(1).write.option("compression", "lz4").text(
        str(hadoop)
    )
    spec = job_spec("dedup_events", tmp_path)
    folder = tmp_path / "land" / "clickstream"
    write_lines(folder, "a.json", _events("a", range(0, 3)))
    [made] = hadoop.glob("part-*.lz4")
    shutil.copy(made, folder / "h.json.lz4")
    (folder / "z.json.lz4").write_bytes(lz4_frame(lines))
    with pytest.raises(UserError, match=r"holds 1 file\(s\) not in Hadoop's block framing"):
        run_job(spec, spark=spark)
    assert not (tmp_path / "out").exists()  # nothing was read
    shutil.move(folder / "z.json.lz4", tmp_path / "moved.json.lz4")
    _gzipped(folder, "z.json.gz", WHOLE)
    assert run_job(spec, spark=spark).input_rows == 3 + 2 * len(WHOLE)


def test_a_name_spark_cannot_read_as_one_file_is_left_out_and_named(spark, tmp_path, capsys):
    """Spark's file source read every other file of a batch twice when one name held a glob
    character (on plain Spark too: aa.json and zz.json of 10 lines beside b[1].json gave 20 rows
    each, exit 0), and a name with ':' failed its batch every time. Such files are left out of
    every listing and the run names them; renamed, each is read once."""
    spec = job_spec("user_counts", tmp_path)
    folder = tmp_path / "land" / "clickstream"
    odd = ("b[1].json", "c{2}.json", "q?.json", "t10:00:00Z.json")
    for k, name in enumerate(("aa.json", "zz.json", *odd)):
        write_lines(folder, name, _events(f"f{k}-", range(0, 10)))
    first = run_job(spec, spark=spark)
    said = capsys.readouterr().err
    assert first.input_rows == 20
    assert "never reads 4 entries" in said and "b[1].json, c{2}.json, q?.json and 1 more" in said
    assert spark.read.format("delta").load(str(tmp_path / "out")).first()["total_events"] == 20

    for k, name in enumerate(odd):
        (folder / name).rename(folder / f"renamed-{k}.json")
    assert run_job(spec, spark=spark).input_rows == 40
    assert spark.read.format("delta").load(str(tmp_path / "out")).first()["total_events"] == 60
    assert "LANDING_FILES_UNREAD" not in validate_checkpoint(spec.checkpoint, spec).codes


def test_a_checkpoint_run_on_another_landing_folder_is_refused_not_read_twice(spark, tmp_path):
    """Spark knows a file by its path: the same files under another folder (a copy, a link to
    the old one) were all read again. A sessions checkpoint ends on a batch that read no file
    (the watermark's), so Spark did not even fail: 493 of 500 events went in as late, the others
    into open sessions a second time, exit 0. Now the run is refused before Spark starts, and new
    files landed in the folder the checkpoint reads are read as before."""
    from spark_jobs.contract import binding

    spec = job_spec("sessions", tmp_path)
    folder = tmp_path / "land" / "clickstream"
    write_lines(folder, "a.json", _events("a", range(0, 20)))
    assert run_job(spec, spark=spark).input_rows == 20
    offsets = sorted((tmp_path / "ckpt" / "offsets").glob("[0-9]*"), key=lambda p: int(p.name))
    last_two = [p.read_text().splitlines()[-1] for p in offsets[-2:]]
    assert len(offsets) >= 2 and last_two[0] == last_two[1]  # the last batch read no file
    version = len(list((tmp_path / "out" / "_delta_log").glob("*.json")))

    copy = tmp_path / "moved" / "clickstream"
    shutil.copytree(folder, copy, copy_function=shutil.copy2)
    link = tmp_path / "link"
    link.symlink_to(folder, target_is_directory=True)
    for other in (copy, link):
        with pytest.raises(UserError) as refused:
            run_job(spec.with_overrides(input=str(other)), spark=spark)
        assert refused.value.exit_code == 4
        assert str(refused.value) == (
            f"checkpoint {spec.checkpoint} read 1 file(s) of landing folder {folder} "
            f"(clickstream); this run's is {other}: Spark knows a file by its path, so a file it "
            "read would be read there again and its rows counted twice. Land new files in "
            f"{folder}; to move that folder, keep its path (make it a link to the new place)"
        )
    assert len(list((tmp_path / "out" / "_delta_log").glob("*.json"))) == version
    assert binding.bound_inputs(spec.checkpoint) == {"clickstream": str(folder)}

    write_lines(folder, "b.json", _events("b", range(20, 23)))
    assert run_job(spec, spark=spark).input_rows == 3
