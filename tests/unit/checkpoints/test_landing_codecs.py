"""A ``.lz4`` or ``.snappy`` landing file not in Hadoop's block framing (what the usual tools write)
is read by Spark as no lines, in silence: the run refuses it before Spark reads it, and says it
once a batch already has. Spark's side of this is held in tests/integration/test_landing_files.py."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from compressed_frames import lz4_frame, snappy_raw

from spark_jobs.checkpoints import landing_codecs
from spark_jobs.checkpoints.synthetic import ROCKSDB, offset_text
from spark_jobs.checkpoints.validate import validate_checkpoint
from spark_jobs.contract.errors import UserError
from spark_jobs.contract.spec import load_spec
from spark_jobs.jobs import runner

pytestmark = pytest.mark.unit

LINES = b'{"event_id": "e1"}\n'
HADOOP_LZ4 = bytes.fromhex("000026a200000fa8817b2261")  # the head of a block Spark itself wrote


@pytest.fixture
def land(tmp_path, monkeypatch) -> Path:
    for var in ("CHECKPOINT", "LANDING", "TABLE"):
        monkeypatch.setenv(f"STATEKEEPER_{var}_ROOTS", str(tmp_path))
    folder = tmp_path / "land"
    folder.mkdir()
    (folder / "a.json").write_bytes(LINES)
    (folder / "b.json.lz4").write_bytes(HADOOP_LZ4)  # Hadoop's framing: read, not named
    (folder / "c.json.snappy").write_bytes(b"")  # empty: nothing to read either way
    (folder / "y.json.snappy").write_bytes(snappy_raw(LINES))
    (folder / "z.json.lz4").write_bytes(lz4_frame(LINES))
    (folder / ".w.json.lz4").write_bytes(lz4_frame(LINES))  # hidden: never read at all
    return folder


def _spec(land: Path):
    tmp = land.parent
    return load_spec("user_counts").with_overrides(
        input=str(land), output=str(tmp / "out"), checkpoint=str(tmp / "ck")
    )


def test_a_run_refuses_files_spark_would_read_as_no_lines(land):
    assert landing_codecs.read_as_nothing(str(land)) == ["y.json.snappy", "z.json.lz4"]
    with pytest.raises(UserError) as refused:
        runner.precheck(_spec(land))
    line = str(refused.value)
    assert "\n" not in line and "holds 2 file(s) not in Hadoop's block framing" in line, line
    assert "y.json.snappy, z.json.lz4; nothing was read; move them out" in line, line
    (land / "y.json.snappy").unlink()
    (land / "z.json.lz4").rename(land.parent / "z.json.lz4")  # moved out: the run goes on
    runner.precheck(_spec(land))


def test_a_file_an_earlier_batch_read_as_nothing_is_said_not_refused(land, capsys):
    """Its name counts as read already: refusing would stop the job for good; its lines are
    landed again under a new name."""
    (land / "y.json.snappy").unlink()
    ck = land.parent / "ck"
    (ck / "offsets").mkdir(parents=True)
    (ck / "metadata").write_text('{"id": "q"}')
    (ck / "offsets" / "0").write_text(offset_text(0, 2, ROCKSDB, int(time.time() * 1000), 1000))
    (ck / "commits").mkdir()
    (ck / "commits" / "0").write_text('v1\n{"nextBatchWatermarkMs":0}')
    (ck / "sources" / "0").mkdir(parents=True)
    entry = {"path": f"file://{land / 'z.json.lz4'}", "timestamp": 0, "batchId": 0}
    (ck / "sources" / "0" / "0").write_text("v1\n" + json.dumps(entry))
    runner.precheck(_spec(land))
    said = [ln for ln in capsys.readouterr().err.splitlines() if "Hadoop's block framing" in ln]
    assert len(said) == 1 and "earlier batches read 1 file(s)" in said[0], said
    assert "z.json.lz4; land their lines again" in said[0], said

    (land / "x.json.lz4").write_bytes(lz4_frame(LINES))  # landed during a continuous run
    report = validate_checkpoint(str(ck), _spec(land))
    [found] = [f for f in report.findings if f.code == "LANDING_FILES_READ_AS_NOTHING"]
    assert found.severity == "warning" and report.exit_code == 10, report.findings
    assert "(read by a batch: z.json.lz4; not read yet: x.json.lz4)" in found.message
