"""Exactly once across a real crash: the driver's JVM of a `python -m spark_jobs run` crashing
mid-run, or the run's whole process group killed (SIGKILL) inside a new checkpoint's first batch,
which used to leave it refused for good; run again, and the tables equal an uninterrupted run's
(no row lost, none doubled): the output table and the quarantine table, both written by the one
query's batches."""

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
import yaml

from spark_jobs.generate import generate

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
ORDER = {"sessions": "session_id", "user_counts": "user_id"}


def specs_copy(tmp: Path, partitions: int = 2) -> Path:
    """The real specs, made to take one file per batch so a run has batches to be killed in."""
    out = tmp / "specs"
    out.mkdir()
    for f in (ROOT / "include" / "jobs").glob("*.yaml"):
        raw = yaml.safe_load(f.read_text())
        raw.update(max_files_per_trigger=1, shuffle_partitions=partitions)
        (out / f.name).write_text(yaml.safe_dump(raw))
    return out


def cli(
    job: str, tmp: Path, specs: Path, name: str, cwd: Path = ROOT, **extra_env: str
) -> subprocess.Popen:
    env = {
        **os.environ,
        "STATEKEEPER_SPECS": str(specs),
        "PYTHONPATH": str(ROOT),
        "STATEKEEPER_CHECKPOINT_ROOTS": str(tmp),
        **extra_env,
    }
    args = [
        sys.executable,
        "-m",
        "spark_jobs",
        "run",
        job,
        "--input",
        str(tmp / "land"),
        "--output",
        str(tmp / name / "out"),
        "--checkpoint",
        str(tmp / name / "ckpt"),
    ]
    return subprocess.Popen(
        args,
        cwd=cwd,
        env=env,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def kill_when(victim: subprocess.Popen, ready, what: str) -> None:
    """SIGKILL the run's whole process group the moment ``ready()`` holds (polled every 20 ms)."""
    deadline = time.time() + 600
    while not ready() and victim.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    assert victim.poll() is None, f"the run ended before {what}: {victim.communicate()[1][-500:]}"
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()


def committed_batches(ckpt: Path) -> int:
    commits = ckpt / "commits"
    return len([p for p in commits.iterdir() if p.name.isdigit()]) if commits.exists() else 0


def driver_jvm(run: subprocess.Popen) -> psutil.Process:
    """The JVM a CLI run started (its driver: pyspark's gateway)."""
    java = [p for p in psutil.Process(run.pid).children(recursive=True) if p.name() == "java"]
    assert len(java) == 1, java
    return java[0]


# sessions (append sink) through the CLI here; every job, user_counts' upsert sink included, has
# its run's whole process group killed mid-run in the invariance harness
# (tests/integration/test_batching_invariance.py, (c)).
@pytest.mark.parametrize("job", ["sessions"])
def test_driver_jvm_crash_mid_run_then_rerun_equals_uninterrupted(
    spark, tmp_path, monkeypatch, job
):
    """The driver's JVM alone crashes mid-run (SIGSEGV, as native code in RocksDB once did): the
    run, still alive, says so in one line, exit 1, naming the crash report, which the JVM wrote
    under the data folder, not into the folder the run was started from. The killed run and its
    re-run go through the CLI; the uninterrupted run, the reference, runs in this process on the
    same spec meanwhile (a JVM start less, and it overlaps the CLI's JVM starts): what it proves
    is its table, not how it was started."""
    from spark_jobs.contract.spec import load_spec
    from spark_jobs.jobs.runner import run_job

    files = 4  # + the closing no-data batch: five batches to be killed among
    for seed in range(files):
        generate("clickstream", str(tmp_path / "land"), 300, keys=30, seed=seed, bad_rate=0.05)
    specs = specs_copy(tmp_path)
    monkeypatch.setenv("STATEKEEPER_CHECKPOINT_ROOTS", str(tmp_path))
    spec = load_spec(job, specs).with_overrides(
        input=str(tmp_path / "land"),
        output=str(tmp_path / "clean" / "out"),
        checkpoint=str(tmp_path / "clean" / "ckpt"),
    )
    data, started_in = tmp_path / "data", tmp_path / "user"
    started_in.mkdir()

    victim = cli(job, tmp_path, specs, "crashed", started_in, STATEKEEPER_DATA=str(data))
    with ThreadPoolExecutor(max_workers=1) as pool:
        clean = pool.submit(run_job, spec, spark=spark)
        deadline = time.time() + 600
        while (
            committed_batches(tmp_path / "crashed" / "ckpt") < 2
            and victim.poll() is None
            and time.time() < deadline
        ):
            time.sleep(0.2)
        assert victim.poll() is None, (
            f"the run ended before it could be killed: {victim.communicate()[1][-500:]}"
        )
        jvm = driver_jvm(victim)
        jvm.send_signal(signal.SIGSEGV)
        _, crashed = victim.communicate(timeout=120)
        killed_at = committed_batches(tmp_path / "crashed" / "ckpt")
        assert 2 <= killed_at < files + 1, killed_at  # killed mid-way
        assert victim.returncode == 1, crashed[-800:]
        report = data / "jvm-crashes" / f"hs_err_pid{jvm.pid}.log"
        assert report.is_file()
        assert "Traceback" not in crashed
        assert crashed.strip().splitlines()[-1] == (
            f"statekeeper: job {job} failed: its driver JVM went away mid-run: it crashed (its "
            f"report: {report}). A batch it did not commit runs again at the next run, once: "
            "nothing is lost or doubled"
        )
        assert list(started_in.iterdir()) == []

        again = cli(job, tmp_path, specs, "crashed")
        out, err = again.communicate(timeout=900)
        assert again.returncode == 0, err[-800:]
        clean.result()

    def table(name):
        df = spark.read.format("delta").load(str(tmp_path / name / "out"))
        return [tuple(r) for r in df.orderBy(ORDER[job]).collect()]

    def quarantine(name):
        df = spark.read.format("delta").load(str(tmp_path / name / "out" / "_quarantine"))
        cols = ["raw_line", "reason", "source_file"]  # not quarantined_at: a time of the run
        return sorted(tuple(r) for r in df.select(*cols).collect())

    expected = table("clean")
    assert expected
    assert table("crashed") == expected
    assert len(quarantine("clean")) == files * 15  # 5 % of 300 lines per file
    assert quarantine("crashed") == quarantine("clean")
    assert json.loads(out.strip().splitlines()[-1])["job"] == job


def test_kill_inside_first_batch_then_rerun_equals_uninterrupted(
    spark, tmp_path, monkeypatch, capsys
):
    """A new checkpoint killed inside batch 0 (offsets/0 written, commits/0 not) is not damage:
    the next run clears what batch 0 left and runs it again. Killed twice: once while batch 0's
    state tasks run (four partitions on two cores: some partitions have state, some none yet),
    once after batch 0 wrote its quarantine table's Delta commit (the output's, written side by
    side, may be in too: the re-run must skip each table's batch 0 it has, under the same query
    id, and write the other's; tests/integration/test_side_by_side_writes.py holds each table
    alone having it)."""
    from spark_jobs.contract.spec import load_spec
    from spark_jobs.jobs.runner import run_job

    for seed in range(2):
        generate("clickstream", str(tmp_path / "land"), 300, keys=30, seed=seed, bad_rate=0.05)
    specs = specs_copy(tmp_path, partitions=4)
    ck, out = tmp_path / "crashed" / "ckpt", tmp_path / "crashed" / "out"

    def state_of_batch0() -> list[Path]:
        return list(ck.glob("state/0/*/1.changelog"))

    kill_when(cli("sessions", tmp_path, specs, "crashed"), state_of_batch0, "batch 0 ran")
    assert (ck / "offsets" / "0").is_file() and committed_batches(ck) == 0
    assert 0 < len(state_of_batch0()) < 4  # cut short while its state tasks ran

    quarantine_v0 = out / "_quarantine" / "_delta_log" / f"{0:020}.json"
    kill_when(cli("sessions", tmp_path, specs, "crashed"), quarantine_v0.exists, "batch 0 wrote")
    assert committed_batches(ck) == 0

    # The re-run and the uninterrupted run in this process (two JVM starts less); this JVM
    # never loaded the crashed checkpoint's state.
    monkeypatch.setenv("STATEKEEPER_CHECKPOINT_ROOTS", str(tmp_path))

    def run(name: str) -> None:
        where = tmp_path / name
        spec = load_spec("sessions", specs).with_overrides(
            input=str(tmp_path / "land"), output=str(where / "out"), checkpoint=str(where / "ckpt")
        )
        run_job(spec, spark=spark)

    run("crashed")
    assert "running batch 0 again" in capsys.readouterr().err  # it says what it moved, and where
    run("clean")

    def table(name: str, sub: str = "") -> list[tuple]:
        df = spark.read.format("delta").load(str(tmp_path / name / "out" / sub))
        if sub:
            df = df.select("raw_line", "reason", "source_file")  # not the time quarantined
        return sorted(tuple(r) for r in df.collect())

    assert table("clean") and table("crashed") == table("clean")
    assert len(table("clean", "_quarantine")) == 2 * 15  # 5 % of 2 x 300 lines, each once
    assert table("crashed", "_quarantine") == table("clean", "_quarantine")
