"""The checkpoint toolkit on synthetic checkpoints (Spark's layout, files only, no JVM)."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from spark_jobs.checkpoints import first_batch, roots
from spark_jobs.checkpoints.inspect import inspect_checkpoint, render
from spark_jobs.checkpoints.layout import StoreFiles, read_layout
from spark_jobs.checkpoints.manifests import find_snapshot, list_snapshots, newest_valid
from spark_jobs.checkpoints.repartition import plan
from spark_jobs.checkpoints.restore import restore
from spark_jobs.checkpoints.rollback import rollback
from spark_jobs.checkpoints.roots import Target
from spark_jobs.checkpoints.snapshots import plan_prune, prune, take_snapshot
from spark_jobs.checkpoints.synthetic import make_checkpoint
from spark_jobs.checkpoints.validate import validate_checkpoint
from spark_jobs.cli import main as cli_main
from spark_jobs.contract.errors import UserError

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def _roots(monkeypatch, tmp_path):
    monkeypatch.setenv("STATEKEEPER_CHECKPOINT_ROOTS", str(tmp_path / "ck"))
    monkeypatch.setenv("STATEKEEPER_SNAPSHOT_ROOTS", str(tmp_path / "snaps"))


def target(tmp_path: Path) -> Target:
    return Target(
        checkpoint=str(tmp_path / "ck" / "job"),
        snapshot_root=str(tmp_path / "snaps" / "job"),
        job="job",
    )


def files_of(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and p.name != "lock"
    }


def test_reachable_versions_follow_snapshots_and_diffs():
    s = StoreFiles("0", "0", "")
    for v in (1, 2, 3, 5, 6):
        s.add("delta", 10, v)
    s.add("snapshot", 10, 5)
    assert s.reachable() == {1, 2, 3, 5, 6}
    r = StoreFiles("0", "0", "")
    for v in (8, 9, 10):
        r.add("changelog", 10, v)
    r.add("zip", 10, 9)
    assert r.reachable() == {9, 10} and r.provider == "rocksdb"


@pytest.mark.parametrize("store", ["rocksdb", "hdfs"])
def test_inspect_and_validate_synthetic(tmp_path, store):
    ck = make_checkpoint(
        tmp_path / "ck" / "job", batches=300, first_batch=200, state_versions=60, store=store
    )
    report = validate_checkpoint(str(ck))
    assert report.findings == [] and report.exit_code == 0
    info = inspect_checkpoint(str(ck))
    assert info["offsets"] == [200, 299] and info["last_committed_batch"] == 299
    op = info["operators"][0]
    assert op["partitions"] == 4 and op["versions"] == [241, 300] and op["provider"] == [store]
    # version 241 is whole, so batch 240 (version 241) is the oldest a rollback can reach
    assert info["recovery_window"]["oldest_restorable_batch"] == 240
    assert "recoverable  back to batch 240" in render(info)


def test_transform_with_state_operators_are_named_from_their_v2_metadata(tmp_path):
    """transformWithState writes its operator metadata only as ``_metadata/v2/<batch>``, one file
    per batch that changed it: the newest names the operator, for inspect and for repartition's
    plan (which refused service_health as "operator 0 is None" while only v1 was read)."""
    ck = make_checkpoint(tmp_path / "ck" / "job", batches=12)
    meta = ck / "state/0/_metadata"
    (meta / "metadata").unlink()
    (meta / "v2").mkdir()
    for batch, info in (
        (2, {"operatorId": 0}),
        (10, {"operatorId": 0, "operatorName": "transformWithStateInPandasExec"}),
    ):
        (meta / "v2" / str(batch)).write_text("v2\n" + json.dumps({"operatorInfo": info}))
        (meta / "v2" / f".{batch}.crc").write_bytes(b"crc")
    info = inspect_checkpoint(str(ck))
    assert [op["name"] for op in info["operators"]] == ["transformWithStateInPandasExec"]
    assert "operator 0   transformWithStateInPandasExec [rocksdb] 4 partitions" in render(info)
    p = plan(Target(str(ck), str(tmp_path / "snaps"), "job"), 8)
    assert (p["from"], p["to"], p["operators"]) == (4, 8, ["transformWithStateInPandasExec"])


def test_validate_exit_codes_through_the_cli(tmp_path, capsys):
    ck = make_checkpoint(tmp_path / "ck" / "job", batches=20)
    assert cli_main(["checkpoint", "validate", "--checkpoint", str(ck)]) == 0
    (ck / "offsets" / ".21.abc.tmp").write_text("v1")
    assert cli_main(["checkpoint", "validate", "--checkpoint", str(ck)]) == 10
    (ck / "offsets" / "7").unlink()
    capsys.readouterr()
    assert cli_main(["checkpoint", "validate", "--checkpoint", str(ck), "--json"]) == 20
    out = json.loads(capsys.readouterr().out)
    assert {f["code"] for f in out["findings"]} >= {
        "OFFSET_GAP",
        "TEMP_FILES",
        "COMMIT_WITHOUT_OFFSET",
    }
    assert all(f["fix"] for f in out["findings"])


def test_a_folder_of_other_files_is_not_a_checkpoint(tmp_path, capsys):
    """A typo'd --checkpoint naming some other folder was "clean" and a run started a checkpoint
    among its files; a folder with only hidden files or our own (a first run cut short before
    Spark wrote anything) is still a new checkpoint."""
    folder = tmp_path / "ck" / "exports"
    (folder / "2026").mkdir(parents=True)
    (folder / "2026" / "orders.csv").write_text("id\n1\n")
    (folder / "README").write_text("exports")
    capsys.readouterr()
    assert cli_main(["checkpoint", "validate", "--checkpoint", str(folder)]) == 20
    out = capsys.readouterr().out
    assert (
        "NOT_A_CHECKPOINT" in out
        and "holds 2 file(s) and no checkpoint (e.g. 2026/orders.csv)" in out
    )

    fresh = tmp_path / "ck" / "new"
    (fresh / "_statekeeper").mkdir(parents=True)
    (fresh / "_statekeeper" / "lock").write_text("{}")
    (fresh / ".keep").write_text("")
    assert validate_checkpoint(str(fresh)).findings == []


def test_validation_of_a_long_checkpoint_is_clean(tmp_path):
    # Speed is measured in bench/bench_checkpoints.py (10,000 batches), not here.
    ck = make_checkpoint(tmp_path / "ck" / "job", batches=1000, partitions=2)
    report = validate_checkpoint(str(ck))
    assert report.exit_code == 0 and report.findings == []


def test_roots_refuse_escapes(tmp_path):
    inside = tmp_path / "ck" / "job"
    inside.mkdir(parents=True)
    assert roots.resolve(None, str(inside)).checkpoint == str(inside.resolve())
    with pytest.raises(UserError, match="outside the checkpoints roots"):
        roots.resolve(None, str(tmp_path / "ck" / ".." / "other"))
    (tmp_path / "ck" / "link").symlink_to(tmp_path)
    with pytest.raises(UserError, match="outside"):
        roots.resolve(None, str(tmp_path / "ck" / "link" / "x"))
    with pytest.raises(UserError, match="outside"):
        roots.resolve(None, str(inside), snapshot_root="/etc/snaps")
    with pytest.raises(UserError):
        roots.resolve(None, None)


def test_snapshot_restore_round_trip(tmp_path):
    t = target(tmp_path)
    ck = make_checkpoint(t.checkpoint, batches=50, unique=True)
    first = take_snapshot(t)
    saved = files_of(ck)
    assert first["batch"] == 49 and first["new_files"] > 0
    # the job moves on: new batches, new state files
    make_checkpoint(t.checkpoint, batches=60, first_batch=50, state_versions=10, unique=True)
    second = take_snapshot(t)
    assert 0 < second["new_bytes"] < second["bytes"] / 3  # only what changed is stored
    done = restore(t, first["id"], keep_tables=True)  # the checkpoint alone, as it was
    assert files_of(ck) == saved
    assert Path(done["old_checkpoint_aside"]).is_dir() and done["validation"]["exit_code"] == 0
    assert read_layout(done["old_checkpoint_aside"]).last_committed == 59


def test_restore_refuses_a_corrupt_snapshot_and_changes_nothing(tmp_path):
    t = target(tmp_path)
    ck = make_checkpoint(t.checkpoint, batches=10)
    snap = take_snapshot(t)
    objects = [p for p in (Path(t.snapshot_root) / "objects").rglob("*") if p.is_file()]
    for p in objects:
        p.write_bytes(b"rot")
    before = files_of(ck)
    with pytest.raises(UserError, match="corrupt"):
        restore(t, snap["id"], keep_tables=True)
    assert files_of(ck) == before
    assert [p.name for p in ck.parent.iterdir()] == ["job"]


def test_restore_dry_run_moves_nothing(tmp_path):
    t = target(tmp_path)
    ck = make_checkpoint(t.checkpoint, batches=10)
    take_snapshot(t)
    before = files_of(ck)
    plan = restore(t, None, dry_run=True, keep_tables=True)
    assert (
        plan["dry_run"]
        and files_of(ck) == before
        and not Path(plan["old_checkpoint_aside"]).exists()
    )


def test_plan_prune_keeps_count_age_and_newest_valid():
    now = 1_000_000.0
    snaps = [
        {"id": f"s{i}", "created_ts": now - i * 3600, "valid": i != 0} for i in range(6)
    ]  # newest first
    assert [m["id"] for m in plan_prune(snaps, keep=3, max_age_s=None, now=now)] == [
        "s3",
        "s4",
        "s5",
    ]
    assert [m["id"] for m in plan_prune(snaps, keep=10, max_age_s=1.5 * 3600, now=now)] == [
        "s2",
        "s3",
        "s4",
        "s5",
    ]
    # everything too old: the newest valid snapshot (s1; s0 is invalid) still stays
    doomed = plan_prune(snaps, keep=1, max_age_s=1, now=now + 10)
    assert "s1" not in [m["id"] for m in doomed] and "s0" in [m["id"] for m in doomed]


def test_prune_deletes_snapshots_and_unused_objects(tmp_path):
    t = target(tmp_path)
    make_checkpoint(t.checkpoint, batches=10, unique=True)
    take_snapshot(t)
    time.sleep(1.1)
    make_checkpoint(t.checkpoint, batches=20, first_batch=10, state_versions=10, unique=True)
    take_snapshot(t)
    assert len(list_snapshots(t.snapshot_root)) == 2
    dry = prune(t, keep=1, max_age_s=None, dry_run=True)
    assert len(dry["deleted"]) == 1 and len(list_snapshots(t.snapshot_root)) == 2
    done = prune(t, keep=1, max_age_s=None)
    # the SSTs the job rewrote are used by the deleted snapshot only
    assert (
        done["deleted"] == dry["deleted"] and done["objects_deleted"] == dry["objects_deleted"] == 4
    )
    assert len(list_snapshots(t.snapshot_root)) == 1
    newest = list_snapshots(t.snapshot_root)[0]
    store = Path(t.snapshot_root) / "objects"
    assert {f["sha256"] for f in newest["files"]} <= {
        p.name for p in store.rglob("*") if p.is_file()
    }


def test_rollback_moves_later_batches_aside_and_refuses_lost_state(tmp_path):
    t = target(tmp_path)
    ck = make_checkpoint(t.checkpoint, batches=100, state_versions=30)
    with pytest.raises(UserError, match="no longer on disk"):
        rollback(t, to_batch=60, keep_tables=True)
    before = files_of(ck)
    dry = rollback(t, to_batch=90, dry_run=True, keep_tables=True)
    assert dry["moved_batches"] == list(range(91, 100)) and files_of(ck) == before
    done = rollback(t, to_batch=90, output=str(tmp_path / "no-table-yet"))
    lay = read_layout(str(ck))
    assert lay.last_committed == 90 and lay.offsets[-1] == 90
    assert max(v for s in lay.data_stores() for v in s.versions) == 91
    assert done["validation"]["exit_code"] == 0
    assert json.loads((ck / "metadata").read_text())["id"] == done["new_query_id"]
    aside = Path(done["aside"])
    assert (aside / "offsets" / "95").is_file() and (aside / "metadata").is_file()  # nothing lost
    assert sum(1 for p in aside.rglob("*") if p.is_file()) == done["moved"] + 1


def test_snapshot_of_an_empty_checkpoint_is_refused(tmp_path):
    t = target(tmp_path)
    os.makedirs(t.checkpoint)
    with pytest.raises(UserError, match="no committed batch"):
        take_snapshot(t)


def test_snapshot_order_follows_taking_not_the_clock(tmp_path, monkeypatch):
    """A clock stepped back an hour (and two snapshots within one second) must not make the older
    snapshot "newest": restore's default, prune's keep and the staleness check follow the order
    the snapshots were taken in, which for one lineage is the order of the batches they hold."""
    t = target(tmp_path)
    make_checkpoint(t.checkpoint, batches=10, unique=True)
    first = take_snapshot(t)
    make_checkpoint(t.checkpoint, batches=20, first_batch=10, state_versions=10, unique=True)
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() - 3600)  # NTP stepped the clock back
    second = take_snapshot(t)
    assert (first["batch"], second["batch"]) == (9, 19)
    assert [m["id"] for m in list_snapshots(t.snapshot_root)] == [second["id"], first["id"]]
    assert find_snapshot(t.snapshot_root, None)["id"] == second["id"]
    assert newest_valid(t.snapshot_root)["id"] == second["id"]
    assert prune(t, keep=1, max_age_s=None, dry_run=True)["deleted"] == [first["id"]]
    # the same batch twice in one second (no run between): the later one is newest
    monkeypatch.setattr(time, "time", lambda: 1_800_000_000.0)
    third = take_snapshot(t)
    fourth = take_snapshot(t)
    assert [m["id"] for m in list_snapshots(t.snapshot_root)][:2] == [fourth["id"], third["id"]]


def test_a_batch_0_cut_short_is_cleared_not_damage(tmp_path):
    """Killed inside batch 0 of a new checkpoint: offsets/0, no commit, state for some partitions
    only. Nothing is committed, so no state is needed: validation says so (info, exit 0) and the
    run's clear moves that state aside; with any batch committed the same state is damage."""
    t = target(tmp_path)
    ck = make_checkpoint(t.checkpoint, batches=1)
    (ck / "commits" / "0").unlink()
    for part in ("2", "3"):
        shutil.rmtree(ck / "state" / "0" / part)
    (ck / "state" / "0" / "1" / ".1.changelog.1234.tmp").write_bytes(b"cut")
    report = validate_checkpoint(str(ck))
    assert report.exit_code == 0 and "FIRST_BATCH_CUT_SHORT" in report.codes
    assert not {"STATE_PARTITIONS", "TEMP_FILES"} & set(report.codes)
    kept = {p: b for p, b in files_of(ck).items() if not p.startswith("state/")}
    cleared = first_batch.clear(str(ck))
    assert cleared is not None and not (ck / "state").exists()
    assert {p: b for p, b in files_of(ck).items() if "first-batch" not in p} == kept
    assert (Path(cleared["aside"]) / "state" / "0" / "1" / ".1.changelog.1234.tmp").is_file()
    assert validate_checkpoint(str(ck)).codes == ["UNCOMMITTED_BATCH"]
    assert first_batch.clear(str(ck)) is None

    # batch 0 committed, batch 1 cut short: its state is needed, partitions missing is damage
    other = make_checkpoint(tmp_path / "ck" / "other", batches=2)
    (other / "commits" / "1").unlink()
    shutil.rmtree(other / "state" / "0" / "3")
    assert "STATE_PARTITIONS" in validate_checkpoint(str(other)).codes
    assert first_batch.clear(str(other)) is None and (other / "state" / "0" / "0").is_dir()


def test_a_repartition_cut_short_is_refused_by_runs_and_put_back_by_the_command(tmp_path):
    """What a killed repartition leaves, by hand (the real kill: tests/integration/
    test_repartition.py): the marker naming the whole copy, a half-rewritten checkpoint, and
    stray copies no marker names. Runs refuse it; the command's first step swaps the copy back
    and deletes the strays; without the copy it refuses, naming the snapshot."""
    from spark_jobs.checkpoints import queries
    from spark_jobs.checkpoints import repartition as R

    t = target(tmp_path)
    ck = make_checkpoint(t.checkpoint, batches=5)
    before = files_of(ck)
    copy = ck.with_name(".job.before-repartition-20260101T000000Z")
    stray = ck.with_name(".job.before-repartition-20251231T000000Z")
    shutil.copytree(ck, copy)
    shutil.copytree(ck, stray)
    queries.mark_pending(ck, "repartition", to=8, undo=copy.name, snapshot="S1")
    (ck / "offsets" / "5").write_text("v1\n{}")  # Spark's half-written repartition batch
    with pytest.raises(UserError, match="repartition to 8 partitions was cut short") as refused:
        queries.check_pending(str(ck))
    assert refused.value.exit_code == 4
    assert R.plan(t, 8)["undo_first"] == str(copy)

    assert R.undo_cut_short(t, ck) == str(copy)
    assert files_of(ck) == before and queries.read_pending(ck) is None
    assert not list(ck.parent.glob(".job.*"))
    queries.check_pending(str(ck))  # runs go on

    queries.mark_pending(ck, "repartition", to=8, undo=copy.name, snapshot="S1")
    with pytest.raises(UserError, match="restore --snapshot S1"):
        R.undo_cut_short(t, ck)  # the copy is gone
