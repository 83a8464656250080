"""The contract package: typed spec blocks with their defaults, one-line spec errors, the flock
helper, the exit codes, and an import that loads neither Spark nor Airflow (no JVM)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from fresh_imports import packages_after

from spark_jobs.cli import main
from spark_jobs.contract.blocks import Quality, Snapshots, Supervise
from spark_jobs.contract.errors import ExitCode, LockHeld, UserError
from spark_jobs.contract.lock import FileLock, is_locked
from spark_jobs.contract.spec import load_spec, parse_spec

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
RAW = {"inputs": {"clickstream": "x"}, "output": "o", "checkpoint": "c", "watermark": "1 minute"}


def test_a_spec_without_blocks_gets_the_models_defaults():
    spec = parse_spec(RAW, "x.yaml")
    assert spec.supervise == Supervise() and spec.snapshots == Snapshots()
    assert spec.quality == Quality()
    # the defaults that used to disagree between readers, now written once
    assert spec.supervise.restart_backoff == 30 and spec.supervise.max_restarts == 5
    assert spec.supervise.restart_window == 3600 and spec.snapshots.keep == 7
    assert spec.snapshots.every is None and spec.quality.freshness_sla is None
    assert spec.quality.pandas_max_rows == 1_000_000


def test_durations_in_blocks_are_seconds_and_unset_keys_keep_defaults():
    spec = load_spec("service_health")
    assert spec.supervise.max_progress_age == 300 and spec.supervise.restart_backoff == 30
    assert spec.supervise.startup_grace == Supervise().startup_grace  # not in the yaml
    assert spec.snapshots.every == 6 * 3600 and spec.snapshots.keep == 8
    assert spec.snapshots.recovery_window == 86400
    assert spec.quality.freshness_sla == 3600 and spec.quality.max_quarantine_rate == 0.05
    assert json.loads(json.dumps(spec.to_dict()))["supervise"]["max_restarts"] == 5


def test_the_readers_take_the_models_defaults():
    from spark_jobs.quality.local import max_rows
    from statekeeper.health import Thresholds

    spec = parse_spec(RAW, "x.yaml")
    th = Thresholds.from_spec(spec.supervise, 0.0)
    assert th == Thresholds()
    assert th.max_progress_age == Supervise().max_progress_age
    assert max_rows(spec) == Quality().pandas_max_rows
    custom = parse_spec({**RAW, "supervise": {"max_progress_age": "2 minutes"}}, "x.yaml")
    assert Thresholds.from_spec(custom.supervise, 10).max_progress_age == 120


@pytest.mark.parametrize(
    "block,needle",
    [
        (
            {"supervise": {"max_restarts": "abc"}},
            "supervise.max_restarts must be an integer >= 0, not 'abc'",
        ),
        ({"supervise": {"max_restarts": -1}}, "supervise.max_restarts must be an integer >= 0"),
        ({"supervise": {"max_progress_age": "soon"}}, "supervise.max_progress_age must be a"),
        ({"snapshots": {"every": 0}}, "snapshots.every must be a positive duration"),
        # Spark's conf is a 32-bit int: refused here, not as a JVM stack trace at run time
        ({"shuffle_partitions": 2**31}, "shuffle_partitions input should be less than or equal"),
        ({"watermark": "99999999999 days"}, "watermark must be a duration such as 30s or 10"),
        ({"snapshots": {"keep": 2.5}}, "snapshots.keep must be an integer >= 0, not 2.5"),
        ({"quality": {"max_quarantine_rate": 3}}, "quality.max_quarantine_rate must be a number"),
        ({"quality": {"freshnes_sla": "1 hour"}}, "unknown key quality.freshnes_sla"),
        ({"snapshots": ["every day"]}, "snapshots must be a mapping"),
        ({"tables": {"retention": "soon"}}, "tables.retention must be a positive duration"),
        ({"tables": {"schedule": ""}}, "tables.schedule must be an Airflow schedule"),
        (
            {"tables": {"vacuum": "1 day"}},
            "unknown key tables.vacuum; tables takes schedule, retention",
        ),
    ],
)
def test_a_bad_block_is_one_line_naming_file_and_field(tmp_path, block, needle):
    (tmp_path / "x.yaml").write_text(yaml.safe_dump({**RAW, **block}))
    with pytest.raises(UserError) as err:
        load_spec("x", tmp_path)
    msg = str(err.value)
    assert msg.startswith(f"job spec {tmp_path / 'x.yaml'}: ") and needle in msg, msg
    assert "\n" not in msg and err.value.exit_code == ExitCode.USER_ERROR


def test_quality_macros_resolve_from_the_typed_block(tmp_path):
    from spark_jobs.quality.suites import _resolve

    spec = load_spec("sessions")
    assert _resolve("${quality.max_quarantine_rate}", spec, "s.yaml") == 0.05
    assert _resolve("${quality.freshness_sla}", spec, "s.yaml") == 7200
    assert _resolve("${params.gap}", spec, "s.yaml") == "30 minutes"
    for ref in ("${quality.nope}", "${quality.model_fields}", "${supervise.max_restarts}"):
        with pytest.raises(UserError, match="is not set in"):
            _resolve(ref, spec, "s.yaml")
    bare = parse_spec(RAW, "x.yaml")
    with pytest.raises(UserError, match="is not set in"):
        _resolve("${quality.freshness_sla}", bare, "s.yaml")


def test_importing_the_contract_loads_neither_spark_nor_airflow():
    """Every contract module, and naming the driver's class archive (the spark-submit command
    on the Airflow side does)."""
    code = textwrap.dedent(
        """
        import importlib, pkgutil
        import spark_jobs.contract
        for mod in pkgutil.iter_modules(spark_jobs.contract.__path__):
            importlib.import_module("spark_jobs.contract." + mod.name)
        from spark_jobs.contract import jvm
        from spark_jobs.contract.spec import load_spec
        load_spec("sessions")
        jvm.java_options()  # names the class archive after pyspark's files, not importing it
        """
    )
    loaded = packages_after(code)
    assert not {p: loaded[p] for p in ("pyspark", "py4j", "airflow") if p in loaded}


def test_the_lock_refuses_a_second_holder_in_this_and_another_process(tmp_path):
    path = tmp_path / "sub" / "lock"
    assert not is_locked(path)  # no file: nobody holds it, and probing creates nothing
    assert not path.exists()
    with FileLock(path) as first:
        assert first.held and is_locked(path)
        with pytest.raises(LockHeld, match=f"{path} is locked by another process"):
            FileLock(path).acquire()  # another open file, same process: refused too
        other = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from pathlib import Path; from spark_jobs.contract.lock import "
                "FileLock; from spark_jobs.contract.errors import LockHeld\n"
                "try:\n    FileLock(Path(sys.argv[1])).acquire()\n"
                "except LockHeld as e:\n    print(e); sys.exit(e.exit_code)\n",
                str(path),
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        assert other.returncode == ExitCode.LOCK_HELD, other.stderr
        assert "is locked by another process" in other.stdout
    assert not first.held and not is_locked(path)
    # readers share; a writer waits for them
    with FileLock(path, shared=True), FileLock(path, shared=True), pytest.raises(LockHeld):
        FileLock(path).acquire()


def test_the_job_lock_names_its_holder(tmp_path):
    from spark_jobs.contract.lock import JobLock, holder, is_held

    ck = str(tmp_path / "ckpt")
    with JobLock(ck, job="sessions", purpose="run"):
        assert is_held(ck) and holder(ck)["job"] == "sessions"
        with pytest.raises(LockHeld, match="in use by run of job sessions") as err:
            JobLock(ck, job="sessions", purpose="snapshot").acquire()
        assert err.value.exit_code == ExitCode.LOCK_HELD
    assert not is_held(ck) and holder(ck) is None


def test_exit_codes_by_name(tmp_path, monkeypatch):
    assert [int(c) for c in (ExitCode.OK, ExitCode.JOB_FAILED, ExitCode.USER_ERROR)] == [0, 1, 2]
    assert (ExitCode.LOCK_HELD, ExitCode.UNSAFE) == (3, 4)
    assert ExitCode.QUALITY_FAILED == ExitCode.JOB_FAILED == 1
    assert main(["run", "no_such_job"]) == ExitCode.USER_ERROR
    monkeypatch.setenv("STATEKEEPER_CHECKPOINT_ROOTS", str(tmp_path))
    assert main(["checkpoint", "validate", "--checkpoint", str(tmp_path / "new")]) == ExitCode.OK
