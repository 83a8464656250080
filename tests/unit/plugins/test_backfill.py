"""A backfill's append is refused at plan time when the live job has read one of its files (no
JVM): the live checkpoint's file source log (Spark's format: ``v1``, then a JSON line per file,
the path a URL) names it; a folder of files it never read plans."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.unit


def test_append_of_a_file_the_live_job_read_is_refused_in_plan(tmp_path, monkeypatch):
    from spark_jobs.checkpoints.source_files import files_read
    from spark_jobs.contract.spec import load_spec
    from statekeeper.backfill import BadBackfillParams, plan_backfill

    monkeypatch.setenv("STATEKEEPER_DATA", str(tmp_path / "data"))
    land = tmp_path / "data" / "landing" / "clickstream"
    land.mkdir(parents=True)
    (land / "read by live.json").write_text("{}\n")
    (land / "new.json").write_text("{}\n")
    log = tmp_path / "data" / "checkpoints" / "windowed_counts" / "sources" / "0"
    log.mkdir(parents=True)
    entry = {"path": (land / "read by live.json").as_uri(), "timestamp": 1, "batchId": 0}
    (log / "0").write_text("v1\n" + json.dumps(entry))
    (log / ".0.crc").write_bytes(b"crc")  # Hadoop's checksum beside it: not a log file
    assert files_read(str(log.parents[1])) == {str(land / "read by live.json")}

    params = {"job": "windowed_counts", "input": str(land), "mode": "append"}
    with pytest.raises(BadBackfillParams, match=r"^mode: append would count twice .*read by live"):
        plan_backfill(params, tmp_path / "data")
    assert plan_backfill({**params, "mode": "replace"}, tmp_path / "data")["files"] == 2
    (land / "read by live.json").unlink()
    plan = plan_backfill(params, tmp_path / "data")
    assert plan["files"] == 1 and load_spec("windowed_counts").checkpoint.startswith(
        str(tmp_path / "data")
    )


def test_append_of_a_copy_of_a_file_the_live_job_read_is_refused(tmp_path, monkeypatch):
    """A file of a name the live job read is that file when it is a link to it, has its bytes
    while it is still there, or its modification time to the millisecond (a restore from an
    archive, ``cp -p``); a file that only shares the name plans. For a job of two kinds, within
    its kind: a lost payments file named like a read orders file plans."""
    import os
    import shutil

    from statekeeper.backfill import BadBackfillParams, plan_backfill

    monkeypatch.setenv("STATEKEEPER_DATA", str(tmp_path / "data"))
    data = tmp_path / "data"
    live = data / "landing" / "clickstream"
    live.mkdir(parents=True)
    read = live / "2026-11-01.json"
    read.write_text('{"a": 1}\n')
    read_ms = read.stat().st_mtime_ns // 1_000_000
    log = data / "checkpoints" / "windowed_counts" / "sources" / "0"
    log.mkdir(parents=True)
    (log / "0").write_text(
        "v1\n" + json.dumps({"path": read.as_uri(), "timestamp": read_ms, "batchId": 0})
    )
    restored = data / "landing" / "restored"
    restored.mkdir()
    (restored / "2026-11-02.json").write_text("{}\n")  # never read by the live job
    copy = restored / "2026-11-01.json"
    params = {"job": "windowed_counts", "input": str(restored), "mode": "append"}
    refused = r"^mode: append .* 1 file\(s\) .*copies of what it read \(2026-11-01\.json\)"

    copy.write_text('{"a": 1}\n')  # a plain copy (a new mtime) while the read file is there
    os.utime(copy, ns=(copy.stat().st_atime_ns, (read_ms + 5) * 1_000_000))
    with pytest.raises(BadBackfillParams, match=refused):
        plan_backfill(params, data)
    copy.unlink()
    copy.symlink_to(read)  # a link to it
    with pytest.raises(BadBackfillParams, match=refused):
        plan_backfill(params, data)
    copy.unlink()
    shutil.copy2(read, copy)
    read.unlink()  # cleaned from the landing folder, then restored with its mtime
    with pytest.raises(BadBackfillParams, match=refused):
        plan_backfill(params, data)
    os.utime(copy, ns=(copy.stat().st_atime_ns, (read_ms + 1) * 1_000_000))
    assert plan_backfill(params, data)["files"] == 2  # only the name is the same: another file

    # a path the live checkpoint's log names outside every landing folder is never opened
    monkeypatch.delenv("STATEKEEPER_LANDING_ROOTS")  # the landing root: the data folder's only
    outside = tmp_path / "elsewhere" / "2026-11-01.json"
    outside.parent.mkdir()
    shutil.copy(copy, outside)  # the same bytes, another mtime
    (log / "0").write_text(
        "v1\n" + json.dumps({"path": outside.as_uri(), "timestamp": 1, "batchId": 0})
    )
    assert plan_backfill(params, data)["files"] == 2

    # order_payments: live read orders/2026-11-01.json; the backfill's payments of that name plan
    base = data / "landing"
    for kind in ("orders", "payments"):
        (base / kind).mkdir()
    order = base / "orders" / "2026-11-01.json"
    order.write_text("{}\n")
    log = data / "checkpoints" / "order_payments" / "sources" / "0"
    log.mkdir(parents=True)
    (log / "0").write_text("v1\n" + json.dumps({"path": order.as_uri(), "batchId": 0}))
    lost = base / "lost"
    for kind in ("orders", "payments"):
        (lost / kind).mkdir(parents=True)
    (lost / "payments" / "2026-11-01.json").write_text("{}\n")  # the same bytes, not the kind
    params = {"job": "order_payments", "input": str(lost), "mode": "append"}
    assert plan_backfill(params, data)["files"] == 1
    (lost / "orders" / "2026-11-01.json").write_text("{}\n")
    with pytest.raises(BadBackfillParams, match=r"1 file\(s\) .*2026-11-01\.json"):
        plan_backfill(params, data)
