"""One reader for the progress log, across its rotated files: typed records (attributes, as
PySpark's ``StreamingQueryProgress``), ``tail`` backwards, ``history`` forwards and a follower
that reads only what was appended, also across a rotation; and the health API and its charts
read through it, so a rotation no longer hides history (``limit=100`` gave 18 records)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "plugins"))

from spark_jobs.contract.progress_log import (  # noqa: E402
    BatchProgress,
    Heartbeat,
    IdleEvent,
    ProgressLog,
    ProgressRecord,
)
from spark_jobs.runtime import progress  # noqa: E402

pytestmark = pytest.mark.unit

T0 = 1_790_000_000.0


def _batch(i: int, **kw) -> dict:
    ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(T0 + i)) + ".000Z"
    return {
        "name": "q",
        "id": "qid",
        "runId": "r1",
        "batchId": i,
        "timestamp": ts,
        "numInputRows": 10,
        "inputRowsPerSecond": 5.0,
        "processedRowsPerSecond": 7.5,
        "durationMs": {"triggerExecution": 100 + i},
        "eventTime": {"watermark": "2026-01-01T00:00:00.000Z", "max": ts},
        "stateOperators": [
            {
                "operatorName": "op",
                "numRowsTotal": i,
                "numRowsUpdated": 1,
                "numRowsRemoved": 0,
                "memoryUsedBytes": 1000,
                "numRowsDroppedByWatermark": 2,
                "customMetrics": {},
            }
        ],
        "statekeeper": {"job": "j", "logged_at": T0 + i + 0.5},
        "pad": "x" * 200,
        **kw,
    }


def _write(ckpt: str, ids: range) -> None:
    for i in ids:
        progress.append_line(progress.progress_path(ckpt), _batch(i))
        if i % 10 == 9:
            idle = progress.idle_record("q", "qid", "r1", "", "j", T0 + i + 0.7)
            progress.append_line(progress.progress_path(ckpt), idle)


@pytest.fixture
def ckpt(tmp_path, monkeypatch) -> str:
    monkeypatch.setenv(progress.MAX_BYTES_ENV, "20000")  # ~25 batches a file: rotations
    return str(tmp_path / "checkpoints" / "keyed")


def test_records_are_typed(ckpt):
    rec = ProgressRecord.from_json(json.dumps(_batch(7, keys={"total": 70, "updated": 3})))
    assert isinstance(rec, BatchProgress)
    assert (rec.batch_id, rec.run_id, rec.num_input_rows) == (7, "r1", 10)
    assert rec.duration_ms["triggerExecution"] == 107
    assert rec.state_operators[0].num_rows_total == 7 and rec.dropped_by_watermark == 2
    assert rec.keys is not None and rec.keys.total == 70 and rec.state_keys == 70
    assert rec.time == T0 + 7 and rec.raw["pad"] == "x" * 200
    assert isinstance(
        ProgressRecord.from_json(progress.idle_record("q", "i", "r", "", "j", 1.0)), IdleEvent
    )
    beat = ProgressRecord.from_json(progress.heartbeat_record("q", "i", "r", "j", 42.0, 1.0))
    assert isinstance(beat, Heartbeat) and beat.batch_running_seconds == 42.0
    assert ProgressRecord.from_json(b'{"batchId": 1, "timest') is None  # a line cut by a kill


def test_tail_and_history_read_across_rotated_files(ckpt):
    _write(ckpt, range(120))
    log = ProgressLog(ckpt)
    assert len(log.files()) >= 4  # rotated
    assert [r.batch_id for r in log.tail(100)] == list(range(20, 120))
    assert [r.batch_id for r in log.tail(5, since=T0 + 50, until=T0 + 60)] == list(range(56, 61))
    everything = log.tail(None, kinds=(BatchProgress, IdleEvent))
    assert sum(isinstance(r, IdleEvent) for r in everything) == 12
    assert [r.batch_id for r in log.history(since=T0 + 100)] == list(range(100, 120))
    assert [r.batch_id for r in log.history()] == list(range(120))


def test_the_follower_reads_only_what_was_appended_across_a_rotation(ckpt):
    _write(ckpt, range(10))
    log = ProgressLog(ckpt)
    follower = log.follow()
    assert follower.read_new() == []  # starts at the end: the history is not read
    _write(ckpt, range(10, 90))  # several rotations between two looks
    got = [r.batch_id for r in follower.read_new() if isinstance(r, BatchProgress)]
    assert got == list(range(10, 90))  # each once, none lost
    assert follower.read_new() == []
    with open(log.current, "a") as fh:  # a line being written: waits for its end
        fh.write(json.dumps(_batch(90))[:50])
    assert follower.read_new() == []
    with open(log.current, "a") as fh:
        fh.write(json.dumps(_batch(90))[50:] + "\n")
    assert [r.batch_id for r in follower.read_new()] == [90]


def test_the_api_and_charts_see_the_history_in_rotated_files(ckpt, tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    from statekeeper.health_app import create_app

    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "keyed.yaml").write_text(
        f"name: keyed\nmode: catch-up\ninputs: {{clickstream: {tmp_path}/landing}}\n"
        f"output: {tmp_path}/tables/keyed\ncheckpoint: {ckpt}\nwatermark: 10 minutes\n"
    )
    monkeypatch.setenv("STATEKEEPER_SPECS", str(specs))
    _write(ckpt, range(120))
    http = TestClient(create_app(auth=False))
    got = http.get("/api/jobs/keyed/progress", params={"limit": 100}).json()
    assert [r["batchId"] for r in got] == list(range(20, 120))
    assert got[-1] == json.loads(json.dumps(_batch(119)))  # exactly as logged
    series = http.get("/api/jobs/keyed/series", params={"range": "all", "points": 2000}).json()
    assert series["batches"] == 120 and series["points"][0]["batch"] == 0
    _write(ckpt, range(120, 150))  # appended and rotated after the first look
    series = http.get("/api/jobs/keyed/series", params={"range": "all", "points": 2000}).json()
    assert [p["batch"] for p in series["points"]] == list(range(150))
    since = http.get("/api/jobs/keyed/series", params={"since": T0 + 140, "points": 2000}).json()
    assert [p["batch"] for p in since["points"]] == list(range(140, 150))


class _Query:
    """What the runner asks of a finished StreamingQuery: its last progress."""

    def __init__(self, last: dict) -> None:
        self.lastProgress = last


def _bytes_read() -> int:
    return int(
        dict(ln.split(": ") for ln in Path("/proc/self/io").read_text().splitlines())["rchar"]
    )


def test_the_runners_wait_reads_only_what_is_appended(tmp_path, monkeypatch):
    import threading

    from spark_jobs.contract.spec import load_spec
    from spark_jobs.jobs.query_wait import wait_for_listener

    monkeypatch.setenv(progress.MAX_BYTES_ENV, str(16_000_000))
    ckpt = str(tmp_path / "ckpt")
    log = progress.progress_path(ckpt)
    Path(log).parent.mkdir(parents=True)
    with open(log, "w") as fh:  # a long history: ~5 MB
        fh.write("".join(json.dumps(_batch(i, runId="old")) + "\n" for i in range(12_000)))
    spec = load_spec("user_counts").with_overrides(checkpoint=ckpt)
    last = _batch(7, durationMs={"addBatch": 5, "triggerExecution": 9})
    writer = threading.Timer(1.5, lambda: progress.append_line(log, last))
    before = _bytes_read()
    writer.start()
    started = time.time()
    wait_for_listener(spec, [_Query(last)], timeout=10)
    waited, read = time.time() - started, _bytes_read() - before
    writer.join()
    assert 1.4 < waited < 5, waited  # returned once the batch was logged
    assert read < 1_000_000, read  # not the history again every 0.2 s
