"""``upgrade preview``'s logic without a JVM: which snapshot ``--since`` picks (and the one-line
refusals), which landing files the shadow run may read (those of the live batches after the
snapshot, up to the last committed one: not a batch planned after it), and how differences are
told apart by key."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from spark_jobs.checkpoints.layout import read_layout
from spark_jobs.contract.errors import UserError
from spark_jobs.upgrade.diff import classify
from spark_jobs.upgrade.preview import files_after, parse_since, pick_snapshot

pytestmark = pytest.mark.unit

NOW = 2_000_000_000.0


def snap(sid: str, batch: int, created: float, valid: bool = True) -> dict:
    return {"id": sid, "batch": batch, "created_ts": created, "valid": valid}


# newest first, as list_snapshots gives them
SNAPS = [
    snap("s7", 7, NOW - 100),
    snap("s5-bad", 5, NOW - 200, valid=False),
    snap("s3", 3, NOW - 300),
]


def test_since_a_batch_picks_the_newest_valid_snapshot_at_or_before_it():
    assert pick_snapshot(SNAPS, 7, None, 9, NOW)["id"] == "s7"
    assert pick_snapshot(SNAPS, 6, None, 9, NOW)["id"] == "s3"  # s5 is not valid
    assert pick_snapshot(SNAPS, None, NOW - 150, 9, NOW)["id"] == "s3"


def test_a_snapshot_past_the_last_committed_batch_is_no_base():
    # after a restore to batch 4, s7 belongs to batches the checkpoint no longer has
    assert pick_snapshot(SNAPS, None, NOW - 50, 4, NOW)["id"] == "s3"


def test_no_snapshot_refusal_names_those_there_are():
    with pytest.raises(UserError) as exc:
        pick_snapshot(SNAPS, 2, None, 9, NOW)
    line = str(exc.value)
    assert "batch 2" in line and "s7 (batch 7), s5-bad (batch 5), s3 (batch 3)" in line
    assert "\n" not in line
    with pytest.raises(UserError, match="holds: none"):
        pick_snapshot([], 2, None, 9, NOW)


def test_since_in_the_future_is_refused():
    with pytest.raises(
        UserError, match="--since 10 is in the future: the last committed batch is 9"
    ):
        pick_snapshot(SNAPS, 10, None, 9, NOW)
    with pytest.raises(UserError, match="in the future"):
        pick_snapshot(SNAPS, None, NOW + 60, 9, NOW)


def test_since_reads_a_batch_or_a_time():
    assert parse_since("12") == (12, None)
    batch, when = parse_since("2026-11-23T09:00:00Z")
    assert batch is None and when == datetime.fromisoformat("2026-11-23T09:00:00+00:00").timestamp()
    batch, when = parse_since("2h")
    assert batch is None and when is not None
    with pytest.raises(UserError, match="neither a time nor a duration"):
        parse_since("soon")


def _checkpoint(
    root: Path, files: dict[int, list[str]], offsets: dict[int, int], commits: int
) -> Path:
    """A checkpoint with one file source: log batch -> files, query batch -> end logOffset, and
    commits for query batches 0..commits-1."""
    for sub in ("sources/0", "offsets", "commits"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "metadata").write_text(json.dumps({"id": "q"}) + "\n")
    for n, names in files.items():
        lines = [
            json.dumps({"path": f"file:///land/{f}", "timestamp": 1, "batchId": n}) for f in names
        ]
        (root / "sources" / "0" / str(n)).write_text("\n".join(["v1", *lines]))
    for b, log in offsets.items():
        meta = {"batchWatermarkMs": 0, "batchTimestampMs": 1, "conf": {}}
        (root / "offsets" / str(b)).write_text(
            f"v1\n{json.dumps(meta)}\n{json.dumps({'logOffset': log})}"
        )
    for b in range(commits):
        (root / "commits" / str(b)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    return root


def test_the_shadow_reads_what_the_live_batches_after_the_snapshot_read_and_no_more(tmp_path):
    # live: batches 0..2 committed (logs 0, 1, 2), batch 3 planned over log 3 but not committed
    live = _checkpoint(
        tmp_path / "live",
        {0: ["a.json"], 1: ["b.json"], 2: ["c.json", "d.json"], 3: ["e.json"]},
        {0: 0, 1: 1, 2: 2, 3: 3},
        commits=3,
    )
    snapshot = _checkpoint(tmp_path / "snap", {0: ["a.json"]}, {0: 0}, commits=1)
    got = files_after(read_layout(str(live)), read_layout(str(snapshot)), 2)
    assert sorted(Path(f).name for f in got) == ["b.json", "c.json", "d.json"]


def row(user: str, minute: int, attempts: int) -> dict:
    return {
        "user_id": user,
        "alert_time": datetime(2026, 3, 15, 12, minute),
        "failed_attempts": attempts,
    }


def test_differences_are_told_apart_by_key():
    shadow = [row("u1", 3, 3), row("u2", 7, 3), row("u2", 7, 3)]
    live = [row("u1", 3, 5), row("u3", 9, 5)]
    d = classify(shadow, live, ["user_id", "alert_time"])
    assert d["added"]["count"] == 2  # both u2 rows: a key written twice counts twice
    assert d["added"]["samples"][0] == {
        "user_id": "u2",
        "alert_time": "2026-03-15T12:07:00",
        "failed_attempts": 3,
    }
    assert d["removed"] == {
        "count": 1,
        "samples": [{"user_id": "u3", "alert_time": "2026-03-15T12:09:00", "failed_attempts": 5}],
    }
    (changed,) = d["changed"]["samples"]
    assert d["changed"]["count"] == 1
    assert changed["key"] == {"user_id": "u1", "alert_time": "2026-03-15T12:03:00"}
    assert [r["failed_attempts"] for r in changed["live"]] == [5]
    assert [r["failed_attempts"] for r in changed["shadow"]] == [3]


def test_samples_are_capped_and_nothing_is_nothing():
    many = [row("u1", m, 3) for m in range(10)]
    d = classify(many, [], ["user_id", "alert_time"], samples=2)
    assert d["added"]["count"] == 10 and len(d["added"]["samples"]) == 2
    empty = classify([], [], ["user_id"])
    assert all(empty[k] == {"count": 0, "samples": []} for k in ("added", "removed", "changed"))


def test_a_kept_shadow_is_no_part_of_the_checkpoints_snapshots(tmp_path, monkeypatch):
    from spark_jobs.checkpoints.roots import Target
    from spark_jobs.checkpoints.snapshots import take_snapshot
    from spark_jobs.checkpoints.synthetic import make_checkpoint

    monkeypatch.setenv("STATEKEEPER_CHECKPOINT_ROOTS", str(tmp_path / "ck"))
    monkeypatch.setenv("STATEKEEPER_SNAPSHOT_ROOTS", str(tmp_path / "snaps"))
    t = Target(str(tmp_path / "ck" / "job"), str(tmp_path / "snaps" / "job"), "job")
    ck = make_checkpoint(t.checkpoint, batches=3)
    kept = ck / "_statekeeper" / "preview" / "20261126T000000Z"
    make_checkpoint(kept / "checkpoint", batches=2)
    (kept / "table" / "_delta_log").mkdir(parents=True)
    (kept / "table" / "_delta_log" / "00000000000000000000.json").write_text("{}\n")
    snap = take_snapshot(t)
    from spark_jobs.checkpoints.manifests import find_snapshot

    files = [f["path"] for f in find_snapshot(t.snapshot_root, snap["id"])["files"]]
    assert files and not [f for f in files if "/preview/" in f]
    assert snap["valid"]


def test_the_shadow_landing_folder_holds_exactly_the_files_named(tmp_path):
    from types import SimpleNamespace

    from spark_jobs.upgrade.preview import stage_inputs

    land = tmp_path / "land" / "auth"
    land.mkdir(parents=True)
    for name in ("a.json", "b.json", "c.json"):
        (land / name).write_text(f'{{"event_id": "{name}"}}\n')
    spec = SimpleNamespace(name="fraud_alerts", inputs={"auth": str(land)})
    got = stage_inputs(spec, {str(land / "a.json"), str(land / "c.json")}, tmp_path / "shadow")
    staged = Path(got["auth"])
    assert sorted(p.name for p in staged.iterdir()) == ["a.json", "c.json"]
    assert (staged / "a.json").read_text() == (land / "a.json").read_text()
    with pytest.raises(UserError, match="is gone; the preview cannot read the same input"):
        stage_inputs(spec, {str(land / "gone.json")}, tmp_path / "shadow2")
    with pytest.raises(UserError, match="outside the landing folders"):
        stage_inputs(spec, {str(tmp_path / "elsewhere.json")}, tmp_path / "shadow3")
