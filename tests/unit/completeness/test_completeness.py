"""Completeness without a JVM: the rule (partition end + the job's settling time, under the
watermark), the ledger a batch's progress record appends to (cumulative, so a batch run again or
lost adds nothing wrong), a kill's torn line, and the typed spec fields."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from spark_jobs import completeness
from spark_jobs.contract import completeness as cp
from spark_jobs.contract.errors import UserError
from spark_jobs.contract.spec import load_spec, parse_spec
from spark_jobs.runtime import progress

pytestmark = pytest.mark.unit

GAP = 1800.0  # sessions' settling time: its gap


def _iso(hhmm: str, day: int = 15) -> str:
    return f"2026-03-{day:02d}T{hhmm}:00.000Z"


def _record(batch: int, watermark: str, oldest: str | None = None) -> dict:
    et = {"watermark": watermark}
    if oldest:
        et["min"] = oldest
    return {"batchId": batch, "eventTime": et}


def _batch(spec, settles: float, record: dict) -> cp.Entry | None:
    """What the runner's listener does with a batch's progress: the hook, then the log line."""
    entry = completeness.record_batch(spec, settles, record)
    progress.append_line(progress.progress_path(spec.checkpoint), record)
    return entry


def _spec(tmp_path, grain: str = "hourly"):
    spec = load_spec("sessions")
    from dataclasses import replace

    return replace(spec, checkpoint=str(tmp_path / "ckpt"), completeness=grain)


def test_a_partition_is_complete_once_the_watermark_passes_its_end_plus_the_settling_time(
    tmp_path,
):
    spec = _spec(tmp_path)
    rec = _batch
    # batch 0: events from 10:05, no watermark yet: nothing is complete, nothing written
    assert rec(spec, GAP, _record(0, "1970-01-01T00:00:00.000Z", _iso("10:05"))) is None
    # batch 1: watermark 11:20; 10:00-11:00 needs 11:30 (end + gap): the ledger starts, empty
    first = rec(spec, GAP, _record(1, _iso("11:20")))
    assert first is not None and first.keys == () and first.seq == 0
    # batch 2: watermark 12:45: 10:00 (needs 11:30) and 11:00 (needs 12:30) are complete
    second = rec(spec, GAP, _record(2, _iso("12:45")))
    assert second is not None
    assert second.keys == ("2026-03-15T10:00:00", "2026-03-15T11:00:00")
    # batch 2 run again after a kill, and a batch that moves no boundary: nothing new
    assert rec(spec, GAP, _record(2, _iso("12:45"))) is None
    assert rec(spec, GAP, _record(3, _iso("12:59"))) is None
    # a lost batch is covered by the next one: 12:00 and 13:00 at once, in order
    third = rec(spec, GAP, _record(5, _iso("14:31")))
    assert third is not None and third.keys == ("2026-03-15T12:00:00", "2026-03-15T13:00:00")
    entries = cp.read(spec.checkpoint)
    assert [e.seq for e in entries] == [0, 1, 2] and len({e.ledger for e in entries}) == 1
    every = [k for e in entries for k in e.keys]
    assert every == sorted(set(every)), "each key once, oldest first"


def test_daily_partitions_and_an_origin_older_than_the_first_watermark(tmp_path):
    spec = _spec(tmp_path, "daily")
    rec = _batch
    entry = rec(spec, 0.0, _record(0, _iso("06:00", day=17), _iso("23:50", day=14)))
    assert entry is not None
    assert entry.keys == ("2026-03-14T00:00:00", "2026-03-15T00:00:00", "2026-03-16T00:00:00")
    assert entry.through == datetime(2026, 3, 17, tzinfo=UTC).timestamp()


def test_a_line_cut_by_a_kill_is_skipped_and_then_cut_off(tmp_path):
    ckpt = str(tmp_path / "ckpt")
    cp.append(ckpt, ("2026-03-15T10:00:00",), through=1.0)
    path = cp.ledger_path(ckpt)
    assert path is not None
    with open(path, "ab") as fh:
        fh.write(b'{"ledger": "x", "seq": 1, "ke')  # the kill
    assert [e.seq for e in cp.read(ckpt)] == [0]
    cp.append(ckpt, ("2026-03-15T11:00:00",), through=2.0)
    assert [(e.seq, e.keys) for e in cp.read(ckpt)] == [
        (0, ("2026-03-15T10:00:00",)),
        (1, ("2026-03-15T11:00:00",)),
    ]


def test_pending_is_what_the_emitted_events_do_not_cover(tmp_path):
    ckpt = str(tmp_path / "ckpt")
    for i in range(3):
        cp.append(ckpt, (cp.partition_key(3600.0 * i),), through=3600.0 * (i + 1))
    entries = cp.read(ckpt)
    ledger = entries[0].ledger
    assert cp.pending(entries, None, None) == entries
    assert [e.seq for e in cp.pending(entries, ledger, 0)] == [1, 2]
    assert cp.pending(entries, ledger, 2) == []
    # events of another ledger (an earlier checkpoint) say nothing about this one
    assert cp.pending(entries, "other", 2) == entries


def test_completeness_and_freshness_are_typed_spec_fields():
    raw = {"inputs": {"clickstream": "x"}, "output": "o", "checkpoint": "c", "watermark": "1m"}
    spec = parse_spec({**raw, "freshness": {"max_watermark_lag": "15 minutes"}}, "s.yaml")
    assert spec.completeness == "hourly" and spec.freshness.max_watermark_lag == 900.0
    assert spec.freshness.max_input_lag is None
    assert parse_spec({**raw, "completeness": "daily"}, "s.yaml").completeness == "daily"
    with pytest.raises(UserError, match="completeness must be one of hourly, daily"):
        parse_spec({**raw, "completeness": "weekly"}, "s.yaml")
    with pytest.raises(UserError, match="freshness.max_watermark_lag must be a positive"):
        parse_spec({**raw, "freshness": {"max_watermark_lag": "soon"}}, "s.yaml")


def test_a_publish_recompletes_the_complete_hours_it_changed_once_per_key(tmp_path):
    import pyarrow as pa
    from deltalake import write_deltalake

    from spark_jobs.contract import paths

    spec = _spec(tmp_path)
    _batch(spec, GAP, _record(0, "1970-01-01T00:00:00.000Z", _iso("09:05")))
    _batch(spec, GAP, _record(1, _iso("12:45")))  # 09:00, 10:00, 11:00 complete
    staged = str(tmp_path / "staged")
    ends = [datetime(2026, 3, 15, h, 20, tzinfo=UTC) for h in (10, 12)]  # 12:00: not complete
    write_deltalake(staged, pa.table({"session_end": pa.array(ends, pa.timestamp("us", "UTC"))}))
    entry = completeness.record_publish(spec, staged, "k1", 7, "session_end")
    assert entry is not None and entry.keys == ("2026-03-15T10:00:00", "2026-03-15T11:00:00")
    assert entry.version == 7
    assert completeness.record_publish(spec, staged, "k1", 7, "session_end") is None  # a retry
    assert [e.keys for e in cp.read(spec.checkpoint, paths.RECOMPLETIONS_FILE)] == [entry.keys]


def test_a_run_starts_by_recording_the_committed_batches_a_kill_left_unrecorded(tmp_path):
    """Batches 2-4 committed, the ledger's last entry is batch 1's (the listener lagged, then a
    kill): the start writes the entry batch 4's offset file implies, once."""
    from spark_jobs.checkpoints.synthetic import make_checkpoint

    spec = _spec(tmp_path)
    t0 = int(datetime(2026, 3, 15, 10, 40, tzinfo=UTC).timestamp() * 1000)
    # batch b ran with the watermark 10:30 + b hours (the synthetic offsets: t0 + b h - 10 min)
    make_checkpoint(spec.checkpoint, batches=5, t0_ms=t0, interval_ms=3_600_000)
    assert completeness.catch_up(spec, GAP) is None, "no ledger and no progress: no origin yet"
    _batch(spec, GAP, _record(0, "1970-01-01T00:00:00.000Z", _iso("10:05")))
    first = _batch(spec, GAP, _record(1, _iso("11:20")))  # complete through 10:00: no key yet
    assert first is not None and first.keys == ()

    # batch 4's watermark is 14:30: every hour ending by 14:30 - the gap is complete
    caught = completeness.catch_up(spec, GAP)
    assert caught is not None and caught.batch_id == 4
    assert caught.keys == tuple(f"2026-03-15T{h}:00:00" for h in range(10, 14))
    assert completeness.catch_up(spec, GAP) is None  # started again: nothing twice
    assert [e.seq for e in cp.read(spec.checkpoint)] == [0, 1]
