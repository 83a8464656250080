"""Kafka sources against a real broker (the session's ``kafka_broker``): bad values quarantined
with topic/partition/offset, the lag in progress and health, per-partition offsets in inspect, a
topic truncated under a job as one clear line, a re-created topic refused by its id, aborted
transactions kept out, and exactly once across a SIGKILL on a 3-partition topic."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from spark_jobs.checkpoints.inspect import inspect_checkpoint, render
from spark_jobs.contract.errors import ExitCode, JobFailed, UserError
from spark_jobs.contract.kafka import parse
from spark_jobs.contract.spec import load_spec
from spark_jobs.jobs.runner import run_job
from spark_jobs.kafka.produce import ensure_topic
from spark_jobs.runtime.progress import read_progress
from statekeeper.health import Thresholds, assess

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 3, 15, 12, 0, tzinfo=UTC)


def at(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def rows(spark: Any, uri: str, order: list[str]) -> list[tuple]:
    return [tuple(r) for r in spark.read.format("delta").load(uri).orderBy(*order).collect()]


def _cli(data: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "STATEKEEPER_DATA": str(data), "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "spark_jobs", "kafka", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_kafka_up_is_a_no_op_when_running_and_status_and_down_check_identity(kafka_local, tmp_path):
    from spark_jobs.kafka import broker

    data = Path(kafka_local.home).parent
    again = _cli(data, "up", "--port", str(kafka_local.port))
    assert (again.returncode, again.stdout.strip()) == (0, kafka_local.bootstrap)
    assert broker.status(Path(kafka_local.home)).pid == kafka_local.pid  # not restarted
    moved = _cli(data, "up", "--port", str(kafka_local.port + 1))
    assert moved.returncode == 2 and "already runs" in moved.stderr
    st = _cli(data, "status")
    assert st.returncode == 0 and kafka_local.bootstrap in st.stdout
    # a pid file naming a live process that is not this broker (this test): stopped, left alone
    other = tmp_path / "kafka"
    other.mkdir()
    fake = {"pid": os.getpid(), "port": 1, "started": 0}
    (other / broker.PID_FILE).write_text(json.dumps(fake))
    assert _cli(tmp_path, "status").returncode == 1
    assert _cli(tmp_path, "down").returncode == 0  # and this process is still here to check


def _spec(job: str, uri: str, tmp: Path, name: str, **changes: Any):
    """The job's spec reading ``uri``, as a spec naming that topic would (a run-time --input may
    not name a cluster the spec does not)."""
    spec = load_spec(job).with_overrides(
        output=str(tmp / name / "out"),
        checkpoint=str(tmp / name / "ckpt"),
        trigger="available-now",
    )
    return replace(spec, **{"inputs": {spec.kinds[0]: uri}, "shuffle_partitions": 2, **changes})


def _send(uri: str, placed: list[tuple[int, str]]) -> None:
    """Each (partition, line) as one record on that partition, in order."""
    from confluent_kafka import Producer

    target = parse(uri)
    ensure_topic(target, 3)
    p = Producer(
        {"bootstrap.servers": target.bootstrap, "enable.idempotence": True, "log_level": 0}
    )
    for part, line in placed:
        p.produce(target.topic, line.encode(), partition=part)
    assert p.flush(30) == 0


def _click(user: str, minute: float, eid: str) -> str:
    return json.dumps(
        {
            "event_id": eid,
            "user_id": user,
            "event_type": "page_view",
            "page": "/",
            "duration_sec": 5,
            "event_time": at(minute),
        }
    )


@pytest.fixture(scope="module")
def bad_values_run(spark, kafka_broker, tmp_path_factory):
    """sessions over a hand-placed 3-partition topic, two records per micro-batch."""
    tmp = tmp_path_factory.mktemp("kafka_quarantine")
    uri = f"kafka://{kafka_broker}/clicks-q"
    placed = [
        (0, _click("u1", 0, "e1")),
        (1, _click("u1", 5, "e2")),
        (2, _click("u2", 1, "e3")),
        (1, '{"event_id": "e4", "user_id": "u1", '),  # cut off: not JSON
        (2, json.dumps({"event_id": "e5", "user_id": "u2", "event_time": at(3)})),  # no type
        (0, _click("u3", 200, "e6")),  # moves the watermark past both sessions
    ]
    _send(uri, placed)
    spec = _spec("sessions", uri, tmp, "run", max_offsets_per_trigger=2)
    summary = run_job(spec, spark=spark)
    return spec, summary


def test_bad_values_are_quarantined_with_topic_partition_and_offset(spark, bad_values_run):
    spec, summary = bad_values_run
    got = rows(spark, spec.output, ["user_id"])
    assert [(r[0], r[4]) for r in got] == [("u1", 2), ("u2", 1)]  # (user_id, events)
    q = spark.read.format("delta").load(spec.quarantine).collect()
    # partition 1 offset 1 and partition 2 offset 1: the second record placed on each
    assert sorted(r["source_file"] for r in q) == ["kafka://clicks-q/1/1", "kafka://clicks-q/2/1"]
    assert summary.quarantined == 2 and summary.input_rows == 6


def test_lag_is_in_every_progress_record_and_in_the_health_verdict(bad_values_run):
    spec, _ = bad_values_run
    records = read_progress(spec.checkpoint)
    behind = [r["lag"]["clicks-q"]["behind"] for r in records]
    # 6 records at most 2 per batch (Spark rounds a partition's share up to 1, so 3 the first)
    assert behind[0] == 6 - records[0]["numInputRows"] > 0 and behind[-1] == 0
    assert all(set(r["lag"]["clicks-q"]["partitions"]) == {"0", "1", "2"} for r in records)
    assert assess(records[:1], True, Thresholds(), now=time.time()).lag == {"clicks-q": behind[0]}
    assert assess(records, True, Thresholds(), now=time.time()).lag == {"clicks-q": 0}


def test_inspect_shows_per_partition_kafka_offsets(bad_values_run):
    spec, _ = bad_values_run
    info = inspect_checkpoint(spec.checkpoint)
    assert info["kafka"]["processed"] == {"clicks-q": {"0": 2, "1": 2, "2": 2}}
    assert "kafka        clicks-q processed to partition@offset 0@2, 1@2, 2@2" in render(info)


def test_a_topic_truncated_under_a_job_is_one_line_error_with_a_fix(spark, kafka_broker, tmp_path):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    uri = f"kafka://{kafka_broker}/clicks-gone"
    _send(uri, [(p, _click(f"u{p}", p, f"g{p}")) for p in range(3)] * 2)
    spec = _spec("sessions", uri, tmp_path, "run")
    run_job(spec, spark=spark)
    _send(uri, [(0, _click("u8", 40, "g8")), (0, _click("u9", 50, "g9"))])  # offsets 2 and 3
    admin = AdminClient({"bootstrap.servers": kafka_broker})
    # retention's doing: partition 0 now starts at 4, past the unread records 2 and 3
    (done,) = admin.delete_records([TopicPartition("clicks-gone", 0, 4)]).values()
    done.result(30)
    with pytest.raises(JobFailed) as err:
        run_job(spec, spark=spark)
    msg = str(err.value)
    assert "\n" not in msg and "kafka://" in msg and "clicks-gone" in msg
    assert "fail_on_data_loss: false" in msg


def _recreate(kafka_broker: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": kafka_broker})
    admin.delete_topics([topic])[topic].result(30)
    deadline = time.time() + 60
    while topic in admin.list_topics(timeout=10).topics and time.time() < deadline:
        time.sleep(0.5)


def test_a_topic_recreated_and_grown_past_the_checkpoint_is_refused_by_its_id(
    spark, kafka_broker, tmp_path
):
    """Spark's data-loss check sees a re-created topic only while it is shorter than the stored
    offsets; past them, its first records would be skipped without a word."""
    from deltalake import DeltaTable

    from spark_jobs.contract.binding import read_binding

    uri = f"kafka://{kafka_broker}/clicks-reborn"
    _send(uri, [(p, _click(f"u{p}", p, f"r{p}")) for p in range(3)] * 2)  # offsets 0-1 each
    spec = _spec("sessions", uri, tmp_path, "run")
    run_job(spec, spark=spark)
    bound = read_binding(spec.checkpoint)["kafka"]["clickstream"]
    assert bound["topic"] == "clicks-reborn" and bound["cluster_id"] and bound["topic_id"]
    version = DeltaTable(spec.output).version()
    _recreate(kafka_broker, "clicks-reborn")
    # MORE records than before on every partition: offsets 0-3, past the checkpoint's 2
    _send(uri, [(p, _click(f"n{p}", 100 + p, f"n{p}-{i}")) for i in range(4) for p in range(3)])
    with pytest.raises(UserError) as err:
        run_job(spec, spark=spark)
    msg = str(err.value)
    assert err.value.exit_code == ExitCode.UNSAFE and "\n" not in msg
    assert "deleted and re-created" in msg and bound["topic_id"] in msg and uri in msg
    assert "new --checkpoint" in msg and "--new-checkpoint-for-existing-table" in msg
    assert DeltaTable(spec.output).version() == version  # nothing was written
    assert read_binding(spec.checkpoint)["kafka"]["clickstream"] == bound  # still the old one


def test_aborted_transactions_never_reach_the_tables(spark, kafka_broker, tmp_path):
    """A transactional producer's aborted records are in the log; read_committed skips them."""
    from confluent_kafka import Producer

    uri = f"kafka://{kafka_broker}/clicks-txn"
    ensure_topic(parse(uri), 3)
    p = Producer(
        {"bootstrap.servers": kafka_broker, "transactional.id": "statekeeper-test", "log_level": 0}
    )
    p.init_transactions(30)
    for txn, ids in (("commit", ["c1", "c2"]), ("abort", ["a1", "a2", "a3"]), ("commit", ["c3"])):
        p.begin_transaction()
        for n, eid in enumerate(ids):
            p.produce("clicks-txn", _click("u1", n, eid).encode(), partition=n % 3)
        p.flush(30)
        p.commit_transaction(30) if txn == "commit" else p.abort_transaction(30)
    spec = _spec("dedup_events", uri, tmp_path, "run")
    run_job(spec, spark=spark)
    got = spark.read.format("delta").load(spec.output).select("event_id").collect()
    assert sorted(r[0] for r in got) == ["c1", "c2", "c3"]
    assert spark.read.format("delta").load(spec.quarantine).count() == 0


def _committed(ckpt: Path) -> int:
    commits = ckpt / "commits"
    return len([p for p in commits.iterdir() if p.name.isdigit()]) if commits.exists() else 0


def test_kill_9_mid_run_then_rerun_equals_uninterrupted_on_3_partitions(
    spark, kafka_broker, tmp_path, monkeypatch
):
    from spark_jobs.generate import generate

    monkeypatch.setenv("STATEKEEPER_DATA", str(tmp_path / "data"))  # generate's staging folder
    uri = f"kafka://{kafka_broker}/clicks-crash"
    report = generate("clickstream", uri, 800, keys=40, seed=7, bad_rate=0.03)
    assert report.bad > 0
    specs = tmp_path / "specs"
    specs.mkdir()
    raw = yaml.safe_load((ROOT / "include" / "jobs" / "sessions.yaml").read_text())
    raw.update(max_offsets_per_trigger=100, shuffle_partitions=2)  # 8 batches to be killed in
    raw["inputs"] = {"clickstream": uri}  # a spec names its cluster; --input may not
    (specs / "sessions.yaml").write_text(yaml.safe_dump(raw))
    ckpt = tmp_path / "crashed" / "ckpt"
    env = {
        **os.environ,
        "STATEKEEPER_SPECS": str(specs),
        "PYTHONPATH": str(ROOT),
        "STATEKEEPER_CHECKPOINT_ROOTS": str(tmp_path),
    }
    victim = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "spark_jobs",
            "run",
            "sessions",
            "--output",
            str(tmp_path / "crashed" / "out"),
            "--checkpoint",
            str(ckpt),
        ],
        cwd=ROOT,
        env=env,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 900  # a loaded CI machine: the first batch can take minutes
    while _committed(ckpt) < 1 and victim.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    assert victim.poll() is None, f"ended before the kill: {victim.communicate()[1][-500:]}"
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()
    assert 1 <= _committed(ckpt) < 8  # killed after a committed batch, before the last
    crashed = replace(_spec("sessions", uri, tmp_path, "crashed"), max_offsets_per_trigger=100)
    run_job(crashed, spark=spark)  # the re-run, on the killed run's checkpoint
    clean = _spec("sessions", uri, tmp_path, "clean")
    run_job(clean, spark=spark)

    def table(uri: str, order: str) -> list[tuple]:
        df = spark.read.format("delta").load(uri).drop("quarantined_at")
        return [tuple(r) for r in df.orderBy(order).collect()]

    expected = table(clean.output, "session_id")
    assert len(expected) > 20
    assert table(crashed.output, "session_id") == expected
    assert table(crashed.quarantine, "source_file") == table(clean.quarantine, "source_file")
    assert len(table(clean.quarantine, "source_file")) == report.bad
