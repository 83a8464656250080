"""The checkpoint toolkit on checkpoints written by the real runner (windowed_counts, both state
store providers): every finding of the catalogue on a corrupted copy, reported with its code and
nothing changed; snapshots, and rollback end to end with outputs equal to an uninterrupted run
(restore end to end: test_checkpoint_safety.py)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from spark_jobs.checkpoints import findings as F
from spark_jobs.checkpoints import validate as V
from spark_jobs.checkpoints.cli import register  # noqa: F401  (the subcommand exists)
from spark_jobs.checkpoints.inspect import inspect_checkpoint
from spark_jobs.checkpoints.layout import read_layout
from spark_jobs.checkpoints.manifests import list_snapshots
from spark_jobs.checkpoints.rollback import rollback
from spark_jobs.checkpoints.roots import Target
from spark_jobs.checkpoints.snapshots import take_snapshot
from spark_jobs.checkpoints.validate import validate_checkpoint
from spark_jobs.cli import main as cli_main
from spark_jobs.contract import binding, delta, paths
from spark_jobs.contract.blocks import Snapshots
from spark_jobs.contract.errors import LockHeld, UserError
from spark_jobs.contract.lock import JobLock
from spark_jobs.contract.spec import load_spec
from spark_jobs.jobs.runner import run_job

pytestmark = pytest.mark.integration

TYPES = ["page_view", "checkout", "purchase"]
ROOT = Path(__file__).resolve().parents[2]


def write_part(land: Path, part: int, files: int = 2) -> None:
    """``files`` JSON-lines files of clickstream, an hour of event time per part, so windows close."""
    land.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        lines = []
        for i in range(12):
            minute = part * 60 + f * 25 + i * 2
            lines.append(
                json.dumps(
                    {
                        "event_id": f"e{part}-{f}-{i}",
                        "user_id": f"u{i % 3}",
                        "event_type": TYPES[i % 3],
                        "page": "/p",
                        "duration_sec": 1,
                        "event_time": f"2026-03-15T{10 + minute // 60:02d}:{minute % 60:02d}:00Z",
                    }
                )
            )
        (land / f"part{part:02d}-{f}.json").write_text("\n".join(lines) + "\n")


def spec_for(tmp: Path, store: str | None = None):
    """windowed_counts on ``tmp``; with ``store``, one file per batch and 2 partitions, else
    exactly the yaml spec (what ``python -m spark_jobs run`` uses)."""
    spec = load_spec("windowed_counts").with_overrides(
        input=str(tmp / "land"),
        output=str(tmp / "out"),
        checkpoint=str(tmp / "ckpt"),
        trigger="available-now",
    )
    if store is None:
        return spec
    return replace(
        spec,
        state_store=store,
        shuffle_partitions=2,
        max_files_per_trigger=1,
        snapshots=Snapshots(),
    )


def run_fresh(spec) -> None:
    """A run in its own driver, as spark-submit does. After a restore or a rollback the state must
    be read from the files: a JVM that ran the old lineage may still hold its state stores (seen
    with RocksDB: the restored run then wrote no changelogs and failed two batches later)."""
    cmd = [
        sys.executable,
        "-m",
        "spark_jobs",
        "run",
        spec.name,
        "--input",
        spec.input,
        "--output",
        spec.output,
        "--checkpoint",
        spec.checkpoint,
        "--trigger",
        "available-now",
    ]
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'plugins'}"}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]


def rows(spark, uri: str) -> list[tuple]:
    df = spark.read.format("delta").load(uri)
    return sorted(tuple(r) for r in df.select("window_start", "event_type", "count").collect())


def tree_hash(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.is_symlink() and p.name != "lock":  # the lock records its holder
            h.update(str(p.relative_to(root)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def base(spark, tmp_path_factory):
    """One real checkpoint per provider: an available-now run of windowed_counts over 4 files."""
    out = {}
    for store in ("rocksdb", "hdfs"):
        tmp = tmp_path_factory.mktemp(f"base-{store}")
        spec = spec_for(tmp, store)
        for part in range(2):
            write_part(tmp / "land", part)
        run_job(spec, spark=spark)  # one file per batch: several batches
        out[store] = (tmp, spec)
    return out


@pytest.fixture(autouse=True)
def _roots(monkeypatch, tmp_path):
    monkeypatch.setenv("STATEKEEPER_CHECKPOINT_ROOTS", str(tmp_path))
    monkeypatch.setenv("STATEKEEPER_SNAPSHOT_ROOTS", str(tmp_path))


def copy_base(base, store: str, tmp_path: Path):
    src, spec = base[store]
    dst = tmp_path / "ckpt"
    shutil.copytree(src / "ckpt", dst, symlinks=True)
    return dst, replace(spec, checkpoint=str(dst))


@pytest.mark.parametrize("store", ["rocksdb", "hdfs"])
def test_clean_checkpoint_inspects_and_validates(base, store, tmp_path):
    ck, spec = copy_base(base, store, tmp_path)
    report = validate_checkpoint(str(ck), spec)
    assert report.findings == [] and report.exit_code == 0
    info = inspect_checkpoint(str(ck))
    assert info["last_committed_batch"] == info["offsets"][1] >= 3
    (op,) = [o for o in info["operators"] if o["versions"]]
    assert op["partitions"] == 2 and op["provider"] == [store]
    assert op["versions"][1] == info["last_committed_batch"] + 1
    kinds = set(op["bytes_by_kind"])
    assert kinds & ({"changelog", "zip"} if store == "rocksdb" else {"delta", "snapshot"})
    assert info["pinned_conf"]["spark.sql.shuffle.partitions"] == "2"
    assert info["recovery_window"]["oldest_restorable_batch"] == 0
    assert info["watermark"] and info["bytes"]["statekeeper"] > 0
    assert cli_main(["checkpoint", "validate", "--checkpoint", str(ck)]) == 0


def _last(ck: Path, kind: str) -> int:
    return max(int(p.name) for p in (ck / kind).iterdir() if p.name.isdigit())


def _state_dir(ck: Path, part: int = 1) -> Path:
    return next(p for p in (ck / "state").iterdir() if (p / str(part)).is_dir()) / str(part)


def _rm(p: Path) -> None:
    for x in (p, p.with_name(f".{p.name}.crc")):
        if x.exists():
            x.unlink()


def _drop_state(ck: Path) -> None:
    need = _last(ck, "commits") + 1
    for p in _state_dir(ck).iterdir():
        if p.name.split(".")[0].split("_")[0] in {str(need), str(need - 1)} or p.suffix in (
            ".zip",
            ".snapshot",
        ):
            p.unlink()


def _fill_source_log(ck: Path) -> None:
    src = next((ck / "sources").iterdir())
    (src / "99.compact").write_text("v1\n" + "x" * 300)


def _cut_in_first_batch(ck: Path) -> None:
    """As a kill inside a new checkpoint's batch 0 leaves it: offsets/0, no commit, and state
    for some partitions only."""
    for kind in ("commits", "offsets"):
        for p in (ck / kind).iterdir():
            if p.name.isdigit() and (kind == "commits" or p.name != "0"):
                _rm(p)
    shutil.rmtree(_state_dir(ck))


def _foreign_folder(ck: Path) -> None:
    """A folder of someone else's files where the checkpoint should be (a typo'd path)."""
    for name in ("metadata", "offsets", "commits", "sources", "state"):
        shutil.rmtree(ck / name) if (ck / name).is_dir() else _rm(ck / name)
    (ck / "orders.csv").write_text("id\n1\n")


def _bind_to_a_removed_table(ck: Path) -> None:
    """The table the checkpoint filled is gone. Every copy shares the base's table, so the copy's
    binding names a path where no table is, as a removed table leaves it."""
    record_file = ck / paths.STATEKEEPER_DIR / paths.BINDING_FILE
    record = json.loads(record_file.read_text())
    gone = ck.parent / "removed_table"
    record[binding.TABLES] = {"output": str(gone), "quarantine": str(gone / "_quarantine")}
    record_file.write_text(json.dumps(record))


# code -> (how to break the copy, spec changes, module constants to lower)
CASES = {
    "METADATA_MISSING": (lambda ck: _rm(ck / "metadata"), {}, {}),
    "METADATA_UNREADABLE": (lambda ck: (ck / "metadata").write_text("{not json"), {}, {}),
    "NOT_A_CHECKPOINT": (_foreign_folder, {}, {}),
    "OFFSET_GAP": (lambda ck: _rm(ck / "offsets" / "1"), {}, {}),
    "COMMIT_GAP": (lambda ck: _rm(ck / "commits" / "1"), {}, {}),
    "COMMIT_WITHOUT_OFFSET": (lambda ck: _rm(ck / "offsets" / str(_last(ck, "offsets"))), {}, {}),
    "UNCOMMITTED_MULTIPLE": (
        lambda ck: [_rm(ck / "commits" / str(_last(ck, "commits"))) for _ in range(2)],
        {},
        {},
    ),
    "UNCOMMITTED_BATCH": (lambda ck: _rm(ck / "commits" / str(_last(ck, "commits"))), {}, {}),
    "FIRST_BATCH_CUT_SHORT": (_cut_in_first_batch, {}, {}),
    "OFFSET_UNPARSABLE": (
        lambda ck: (ck / "offsets" / str(_last(ck, "offsets"))).write_text("v1\n{broken"),
        {},
        {},
    ),
    "COMMIT_UNPARSABLE": (
        lambda ck: (ck / "commits" / str(_last(ck, "commits"))).write_text(""),
        {},
        {},
    ),
    "STATE_MISSING": (_drop_state, {}, {}),
    "STATE_PARTITIONS": (lambda ck: shutil.rmtree(_state_dir(ck)), {}, {}),
    "TEMP_FILES": (lambda ck: (ck / "offsets" / ".7.1f2e3d.tmp").write_text("v1"), {}, {}),
    "CONF_SHUFFLE_PARTITIONS": (None, {"shuffle_partitions": 3}, {}),
    "CONF_STATE_STORE": (None, {"state_store": "OTHER"}, {}),
    "RETAINED_FEWER": (
        lambda ck: [_rm(ck / d / "0") for d in ("offsets", "commits")],
        {"min_batches_to_retain": 50},
        {},
    ),
    "RETAINED_TOO_MANY": (None, {"min_batches_to_retain": 1}, {"TOO_MANY_SLACK": 0}),
    "STATE_CLEANUP_LAGGING": (None, {"min_batches_to_retain": 1}, {"STATE_VERSIONS_LIMIT": 0}),
    "RECOVERY_WINDOW_UNMET": (None, {"snapshots": Snapshots(recovery_window="30 days")}, {}),
    "SNAPSHOT_STALE": (
        lambda ck: os.utime(ck / "metadata", (1, 1)),
        {"snapshots": Snapshots(every="1 hour", keep=3)},
        {},
    ),
    "FILE_SOURCE_LOG_BLOAT": (_fill_source_log, {}, {"SOURCE_LOG_BLOAT_BYTES": 100}),
    "TABLE_GONE": (_bind_to_a_removed_table, {}, {}),
}


# Kafka's findings need a Kafka source's offsets: tests/unit/kafka/test_kafka_units.py checks them.
KAFKA_CODES = {"SOURCE_CHANGED", "KAFKA_OFFSETS_UNREADABLE"}
# A landing file the job never read, one changed after its batch, or one Spark reads as no lines
# needs a landing folder beside the checkpoint: tests/unit/checkpoints/test_unread_landing_files.py,
# test_landing_changes.py and test_landing_codecs.py check them, test_landing_files.py on real runs.
LANDING_CODES = {"LANDING_FILES_UNREAD", "LANDING_FILES_CHANGED", "LANDING_FILES_READ_AS_NOTHING"}


def test_catalogue_is_covered():
    assert set(CASES) == set(F.CATALOGUE) - KAFKA_CODES - LANDING_CODES


# Every finding on the RocksDB checkpoint; the ones about state files on the HDFS-backed one too.
FINDINGS = [("rocksdb", c) for c in sorted(CASES)] + [
    ("hdfs", c)
    for c in ("STATE_MISSING", "STATE_PARTITIONS", "CONF_STATE_STORE", "STATE_CLEANUP_LAGGING")
]


@pytest.mark.parametrize("store,code", FINDINGS)
def test_finding(base, store, code, tmp_path, monkeypatch):
    ck, spec = copy_base(base, store, tmp_path)
    breaker, changes, consts = CASES[code]
    if breaker:
        breaker(ck)
    if changes.get("state_store") == "OTHER":
        changes = {"state_store": "hdfs" if store == "rocksdb" else "rocksdb"}
    for name, value in consts.items():
        monkeypatch.setattr(V, name, value)
    spec = replace(spec, **changes)
    before = tree_hash(ck)
    report = validate_checkpoint(str(ck), spec, snapshot_root=str(tmp_path / "snaps"))
    assert code in report.codes, report.findings
    found = next(f for f in report.findings if f.code == code)
    assert found.severity == F.CATALOGUE[code][0] and found.fix and found.message
    want_exit = {"error": 20, "warning": 10, "info": 0}[found.severity]
    assert report.exit_code >= want_exit
    if not changes and not consts:  # the command line says the same, by exit code
        assert cli_main(["checkpoint", "validate", "--checkpoint", str(ck)]) == report.exit_code
    assert tree_hash(ck) == before, "validation changed the checkpoint"


def test_new_checkpoint_is_clean(tmp_path):
    report = validate_checkpoint(str(tmp_path / "nope"))
    assert report.findings == [] and report.exit_code == 0 and not report.exists


def test_paths_outside_roots_are_refused(base, tmp_path, capsys):
    src, _spec = base["rocksdb"]
    rc = cli_main(["checkpoint", "inspect", "--checkpoint", str(src / "ckpt")])
    assert rc == 2 and "outside the checkpoints roots" in capsys.readouterr().err
    rc = cli_main(["checkpoint", "inspect", "--checkpoint", str(tmp_path / ".." / "elsewhere")])
    assert rc == 2


def test_snapshot_is_incremental_live_under_a_run_refused_under_others(base, tmp_path):
    ck, _spec = copy_base(base, "rocksdb", tmp_path)
    target = Target(
        checkpoint=str(ck), snapshot_root=str(tmp_path / "snaps"), job="windowed_counts"
    )
    before = tree_hash(ck)
    first = take_snapshot(target)
    assert first["valid"] and first["new_files"] > 0 and first["batch"] == _last(ck, "commits")
    second = take_snapshot(target)
    assert second["new_bytes"] == 0 and second["reused_files"] == second["files"]
    man = list_snapshots(target.snapshot_root)[0]
    assert man["query_id"] and all(len(f["sha256"]) == 64 for f in man["files"])
    assert any(f["path"].startswith("_statekeeper/") for f in man["files"])
    assert not any(f["path"] == "_statekeeper/lock" for f in man["files"])
    with JobLock(str(ck), job="windowed_counts", purpose="rollback"), pytest.raises(LockHeld):
        take_snapshot(target)
    with JobLock(str(ck), job="windowed_counts", purpose="run"):  # a running job: a live copy
        live = take_snapshot(target)
    assert live["live"] and live["valid"] and live["batch"] == first["batch"]
    assert tree_hash(ck) == before


def test_rollback_equals_uninterrupted_run(spark, tmp_path):
    """Rollback by default: the table goes back to before batch N's successors, the checkpoint to
    N with a new query id; run again: the table equals an uninterrupted run."""
    t = tmp_path / "rb"
    spec = spec_for(t)
    for part in range(2):  # two runs: a batch per part (and a no-data batch each)
        write_part(t / "land", part)
        run_job(spec, spark=spark)
    ck = Path(spec.checkpoint)
    target = Target(checkpoint=str(ck), snapshot_root=str(tmp_path / "snaps"), job=spec.name)
    lay = read_layout(str(ck))
    n = next(
        b
        for b in range(lay.last_committed - 2, -1, -1)
        if delta.txn_log(spec.output).version_of_batch((lay.query_id,), b) is not None
    )

    with pytest.raises(UserError, match="not a committed batch"):
        rollback(target, to_batch=lay.last_committed + 5, output=spec.output)
    dry = rollback(target, to_batch=n, dry_run=True, output=spec.output)
    assert dry["moved_batches"] == list(range(n + 1, lay.last_committed + 1))
    assert read_layout(str(ck)).last_committed == lay.last_committed  # dry run: nothing moved
    done = rollback(target, to_batch=n, output=spec.output, spark=spark)
    assert done["queries"][0]["table_version"] is not None
    assert done["validation"]["exit_code"] == 0 and read_layout(str(ck)).last_committed == n
    run_fresh(spec)
    straight = spec_for(tmp_path / "straight")
    for part in range(2):
        write_part(tmp_path / "straight" / "land", part)
    run_job(straight, spark=spark)
    assert rows(spark, spec.output) == rows(spark, straight.output)


def test_rollback_refused_when_state_is_gone(base, tmp_path):
    ck, spec = copy_base(base, "hdfs", tmp_path)
    for p in _state_dir(ck).iterdir():
        if p.name in ("1.delta", ".1.delta.crc"):
            p.unlink()
    before = tree_hash(ck)
    target = Target(checkpoint=str(ck), snapshot_root=str(tmp_path / "snaps"), job=spec.name)
    with pytest.raises(UserError, match="no longer on disk"):
        rollback(target, to_batch=0, keep_tables=True)  # refused before tables matter
    assert tree_hash(ck) == before
