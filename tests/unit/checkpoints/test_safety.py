"""Checkpoint safety without a JVM: hostile snapshot manifests, links inside a checkpoint, the
roots, a restore cut short between its renames, snapshots of a checkpoint being written, and
``run`` refusing a new checkpoint on a table another query wrote."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from spark_jobs.checkpoints import restore as restore_mod
from spark_jobs.checkpoints import roots, writer_guard
from spark_jobs.checkpoints.layout import read_layout
from spark_jobs.checkpoints.manifests import list_snapshots
from spark_jobs.checkpoints.restore import restore
from spark_jobs.checkpoints.roots import Target
from spark_jobs.checkpoints.snapshots import prune, take_snapshot
from spark_jobs.checkpoints.synthetic import LiveWriter, make_checkpoint
from spark_jobs.cli import main as cli_main
from spark_jobs.contract.errors import ExitCode, UserError

pytestmark = pytest.mark.unit


@pytest.fixture
def t(tmp_path, monkeypatch) -> Target:
    monkeypatch.setenv("STATEKEEPER_CHECKPOINT_ROOTS", str(tmp_path / "ck"))
    monkeypatch.setenv("STATEKEEPER_SNAPSHOT_ROOTS", str(tmp_path / "snaps"))
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


def manifest_path(t: Target, snap_id: str) -> Path:
    return Path(t.snapshot_root) / "snapshots" / snap_id / "manifest.json"


def test_prune_never_deletes_outside_the_store(t, tmp_path):
    """A manifest whose id is ``../../../victim`` must not make prune delete that folder."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("keep me")
    make_checkpoint(t.checkpoint, batches=5)
    real = take_snapshot(t)
    evil = json.loads(manifest_path(t, real["id"]).read_text())
    evil.update(id="../../../victim", created_ts=1.0, valid=False)
    evil_path = manifest_path(t, "evil")
    evil_path.parent.mkdir(parents=True)
    evil_path.write_text(json.dumps(evil))
    with pytest.raises(UserError, match="not its folder's name"):
        prune(t, keep=1, max_age_s=None)
    assert (victim / "precious").read_text() == "keep me"


@pytest.mark.parametrize("hostile", ["../escaped", "ABSOLUTE", "state/../../escaped"])
def test_restore_refuses_manifest_paths_that_leave_the_checkpoint(t, tmp_path, hostile):
    ck = make_checkpoint(t.checkpoint, batches=5)
    snap = take_snapshot(t)
    escaped = tmp_path / "ck" / "escaped" if "escaped" in hostile else tmp_path / "abs-escaped"
    path = str(escaped) if hostile == "ABSOLUTE" else hostile
    man = json.loads(manifest_path(t, snap["id"]).read_text())
    man["files"].append({**man["files"][0], "path": path})
    manifest_path(t, snap["id"]).write_text(json.dumps(man))
    before = files_of(ck)
    with pytest.raises(UserError, match="unsafe"):
        restore(t, snap["id"], keep_tables=True)
    assert not escaped.exists()
    assert files_of(ck) == before


def test_snapshot_never_follows_a_link(t, tmp_path):
    secret = tmp_path / "secret"
    secret.write_bytes(b"the contents of a file outside the checkpoint")
    ck = make_checkpoint(t.checkpoint, batches=5)
    (ck / "state" / "0" / "0" / "99.changelog").symlink_to(secret)
    with pytest.raises(UserError, match="symbolic link"):
        take_snapshot(t)
    stored = [p.read_bytes() for p in Path(t.snapshot_root).rglob("*") if p.is_file()]
    assert secret.read_bytes() not in stored and list_snapshots(t.snapshot_root) == []


def test_roots_accept_checkpoints_only(tmp_path, monkeypatch):
    """The data folder is not a root: its tables, landing files and Airflow's home are not
    checkpoints; its checkpoints and a backfill's own checkpoint are."""
    data = tmp_path / "data"
    monkeypatch.setenv("STATEKEEPER_DATA", str(data))
    monkeypatch.delenv("STATEKEEPER_CHECKPOINT_ROOTS", raising=False)
    backfill = data / "backfill" / "sessions" / "k1"
    for d in (
        "checkpoints/sessions",
        "tables/sessions/_delta_log",
        "landing/clickstream",
        "airflow/logs",
        "backfill/sessions/k1/table/_delta_log",
        "backfill/sessions/k1/checkpoint",
    ):
        (data / d).mkdir(parents=True)
    assert roots.resolve(None, str(data / "checkpoints" / "sessions")).job == "sessions"
    assert roots.resolve(None, str(backfill / "checkpoint")).checkpoint.endswith("k1/checkpoint")
    for wrong in (
        "tables/sessions",
        "landing/clickstream",
        "airflow",
        "airflow/logs",
        "backfill/sessions/k1/table",
        "tables/sessions/_delta_log",
    ):
        with pytest.raises(UserError):
            roots.resolve(None, str(data / wrong))


def test_restore_cut_between_its_two_renames_keeps_a_checkpoint(t, monkeypatch):
    """Without renameat2 the swap is two renames; dying between them must leave the old
    checkpoint in place, not no checkpoint (which a run would take for a new one)."""
    ck = make_checkpoint(t.checkpoint, batches=10)
    snap = take_snapshot(t)
    make_checkpoint(t.checkpoint, batches=15, first_batch=10, state_versions=5)
    before = files_of(ck)
    monkeypatch.setattr(restore_mod, "exchange", lambda a, b: False)
    real_rename = Path.rename

    def rename(self: Path, dest):  # the second rename (staged -> checkpoint) dies
        if ".restore-" in self.name and Path(dest) == ck:
            raise OSError("killed between the renames")
        return real_rename(self, dest)

    monkeypatch.setattr(Path, "rename", rename)
    with pytest.raises(OSError, match="killed"):
        restore(t, snap["id"], keep_tables=True)
    assert files_of(ck) == before
    assert read_layout(str(ck)).last_committed == 14


def test_snapshots_of_a_running_checkpoint_restore_clean(t, tmp_path):
    """Snapshots taken while a writer holds the run lock and commits batches (and cleans up old
    ones) are each a consistent checkpoint at a committed batch."""
    taken = []
    # retain as our specs do (min_batches_to_retain 20): cleanup trails the last commit by that
    # much, here 1 s of 50 ms batches (at the writer's default 2 ms, 40 ms: on a busy machine
    # every cut's checks lost a source log to it, a race no real job runs)
    with LiveWriter(t.checkpoint, retain=20, pause=0.05) as w:
        deadline = time.time() + 20
        while len(taken) < 4 and time.time() < deadline:
            # a new batch since the last copy (the writer is a thread: it may stall meanwhile)
            after = taken[-1]["batch"] + 1 if taken else 0
            if w.committed >= max(3 * (len(taken) + 1), after):
                taken.append(take_snapshot(t))
    assert len(taken) == 4 and all(s["live"] and s["valid"] for s in taken), [
        (s["batch"], s["findings"]) for s in taken
    ]
    assert [s["batch"] for s in taken] == sorted({s["batch"] for s in taken})
    for i, snap in enumerate(taken):
        other = Target(
            checkpoint=str(tmp_path / "ck" / f"restored{i}"),
            snapshot_root=t.snapshot_root,
            job="job",
        )
        done = restore(other, snap["id"], keep_tables=True)
        assert done["validation"]["exit_code"] == 0, done["validation"]
        lay = read_layout(other.checkpoint)
        assert lay.last_committed == lay.last_offset == snap["batch"]
        assert max(v for s in lay.data_stores() for v in s.versions) == snap["batch"] + 1
    for man in list_snapshots(t.snapshot_root):
        assert "_statekeeper/lock" not in {f["path"] for f in man["files"]}


def _delta_log(table: Path, app_id: str, batch: int, as_checkpoint: bool) -> None:
    """The txn bookkeeping of a table an idempotent stream wrote: in a JSON commit, or only in
    a Delta checkpoint after log cleanup (the same columns Delta writes)."""
    log = table / "_delta_log"
    log.mkdir(parents=True)
    txn = {"appId": app_id, "version": batch, "lastUpdated": 1}
    if not as_checkpoint:
        (log / f"{0:020d}.json").write_text(json.dumps({"txn": txn}) + "\n")
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"txn": [txn, None]}), log / f"{10:020d}.checkpoint.parquet")


@pytest.mark.parametrize("as_checkpoint", [False, True])
def test_run_refuses_a_new_checkpoint_on_a_table_another_query_wrote(
    tmp_path, capsys, monkeypatch, as_checkpoint
):
    monkeypatch.setenv("STATEKEEPER_CHECKPOINT_ROOTS", str(tmp_path / "ck"))
    out = tmp_path / "out"
    _delta_log(out, "1b7e3c9a-old-query", 41, as_checkpoint)
    (tmp_path / "land").mkdir()
    args = ["run", "dedup_events", "--input", str(tmp_path / "land"), "--output", str(out)]
    assert cli_main([*args, "--checkpoint", str(tmp_path / "ck" / "new")]) == 4
    err = capsys.readouterr().err
    assert "1b7e3c9a-old-query" in err and "--new-checkpoint-for-existing-table" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "ck" / "new").exists()
    # The same query's checkpoint passes the guard (the quarantine table is new: no writes),
    # also with batch 41 planned but not committed (killed after the write: Delta skips it).
    own = tmp_path / "own"
    for folder, batches in (("offsets", (40, 41)), ("commits", (40,))):
        (own / folder).mkdir(parents=True)
        for b in batches:
            (own / folder / str(b)).write_text("v1\n{}\n")
    (own / "metadata").write_text(json.dumps({"id": "1b7e3c9a-old-query"}) + "\n")
    writer_guard.check_outputs(str(out), str(out / "_quarantine"), str(own))

    # A copy of it that stayed behind (batch 41 was the twin's): its batch 41 would be skipped.
    (own / "offsets" / "41").unlink()
    with pytest.raises(UserError) as behind:
        writer_guard.check_outputs(str(out), str(out / "_quarantine"), str(own))
    assert behind.value.exit_code == ExitCode.UNSAFE
    assert str(behind.value) == (
        f"table {out} holds batch 41 of query 1b7e3c9a-old-query, which checkpoint {own} never "
        "planned (its newest batch is 40): a copy of this checkpoint wrote the table since, and "
        "Delta would skip this one's next batches as written, losing their rows; keep running "
        f"the copy, or make this one take over: checkpoint rollback --checkpoint {own} "
        "--to-batch 40 (the table goes back to before batch 41 and the checkpoint gets a new "
        "query id)"
    )


def _racing_validate(monkeypatch, t: Target, races: int) -> list[int]:
    """The real validate, with a source log file moved away for its first ``races`` calls, as
    Spark's cleanup removes one while a live snapshot's checks read the checkpoint."""
    from spark_jobs.checkpoints import validate as validate_mod

    real = validate_mod.validate_checkpoint
    calls: list[int] = []

    def racing(checkpoint, **kw):
        calls.append(1)
        if len(calls) > races:
            return real(checkpoint, **kw)
        log = min((Path(checkpoint) / "sources" / "0").glob("[0-9]*"), key=lambda p: int(p.name))
        aside = log.with_name("aside")
        log.rename(aside)
        try:
            return real(checkpoint, **kw)
        finally:
            aside.rename(log)

    monkeypatch.setattr(validate_mod, "validate_checkpoint", racing)
    return calls


def test_a_live_snapshot_whose_checks_lose_a_file_to_cleanup_cuts_again(t, monkeypatch):
    """A source log file removed while the cut's checks read it (CI saw FileNotFoundError
    escape ``take_snapshot``) makes that cut invalid; the next cut is taken and valid."""
    with LiveWriter(t.checkpoint, retain=20, pause=0.2) as w:  # no cleanup meanwhile
        while w.committed < 3:
            time.sleep(0.05)
        calls = _racing_validate(monkeypatch, t, races=1)
        snap = take_snapshot(t)
    assert len(calls) >= 2 and snap["live"] and snap["valid"], snap["findings"]


def test_a_live_snapshot_that_loses_every_race_is_one_line(t, monkeypatch):
    with LiveWriter(t.checkpoint, retain=20, pause=0.2) as w:  # no cleanup meanwhile
        while w.committed < 3:
            time.sleep(0.05)
        _racing_validate(monkeypatch, t, races=99)
        with pytest.raises(UserError, match="changed under every snapshot attempt"):
            take_snapshot(t)
