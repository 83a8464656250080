"""Completeness exactly once across a real kill -9: the sessions job's run is SIGKILLed (its
whole process group) after its listener appended one batch's ledger entry but before that
batch's progress line, while the batches after it committed with no entry (the listener lags
the query); the run again announces every hour once, oldest first, and none before its rows
were in the Delta table. The Airflow side emits what the ledger holds, its cursor committed
with the events (tests/dags/test_completeness_dags.py)."""

import json
import os
from pathlib import Path

import pytest
from test_crash import cli, committed_batches, kill_when, specs_copy

from spark_jobs.completeness import PAUSE_ENV
from spark_jobs.contract import completeness as cp

pytestmark = pytest.mark.e2e

FILES = 6  # one event-time hour each, 10:00 to 15:00: batches 0-5 (one file per batch)
PAUSED_AFTER = 3  # the first batch with a key (10:00); batches 4 and 5 then commit unrecorded


def land_hours(land: Path) -> None:
    """Hour 10 + k in file k: three users, events 5 minutes apart to :20, so each user has one
    session per hour (40 minutes to the next hour's first event > the 30-minute gap)."""
    land.mkdir(parents=True)
    for k in range(FILES):
        lines = [
            json.dumps(
                {
                    "event_id": f"e{k}-{u}-{m}",
                    "user_id": f"u{u}",
                    "event_type": "page_view",
                    "page": "/",
                    "duration_sec": 1,
                    "event_time": f"2026-03-15T{10 + k}:{m:02d}:00Z",
                }
            )
            for u in range(3)
            for m in range(0, 21, 5)
        ]
        f = land / f"part{k:02d}.json"
        f.write_text("\n".join(lines) + "\n")
        os.utime(f, (1_700_000_000 + k, 1_700_000_000 + k))  # read in this order, one a batch


def sessions_by_hour(table: Path, version: int | None = None) -> dict[str, list[str]]:
    from deltalake import DeltaTable

    rows = DeltaTable(str(table), version=version).to_pyarrow_table(
        columns=["session_id", "session_end"]
    )
    out: dict[str, list[str]] = {}
    for sid, end in zip(
        rows["session_id"].to_pylist(), rows["session_end"].to_pylist(), strict=True
    ):
        out.setdefault(cp.partition_key(cp.floor(end.timestamp(), "hourly")), []).append(sid)
    return {k: sorted(v) for k, v in out.items()}


def version_at(table: Path, epoch: float) -> int:
    """The newest table version committed at or before ``epoch``."""
    from deltalake import DeltaTable

    done = [
        h["version"] for h in DeltaTable(str(table)).history() if h["timestamp"] <= epoch * 1000
    ]
    assert done, f"no commit before {epoch}"
    return max(done)


def test_kill_9_between_ledger_and_progress_then_rerun_announces_each_hour_once(
    tmp_path, monkeypatch
):
    from spark_jobs.completeness import catch_up
    from spark_jobs.contract.spec import load_spec
    from spark_jobs.jobs import definition
    from spark_jobs.runtime import progress

    land_hours(tmp_path / "land")
    specs = specs_copy(tmp_path)
    ck, out = tmp_path / "run" / "ckpt", tmp_path / "run" / "out"

    def paused_with_every_batch_committed() -> bool:
        paused = any(e.batch_id == PAUSED_AFTER for e in cp.read(str(ck)))
        return paused and committed_batches(ck) == FILES

    victim = cli("sessions", tmp_path, specs, "run", **{PAUSE_ENV: str(PAUSED_AFTER)})
    kill_when(victim, paused_with_every_batch_committed, "its last batch committed")
    last = cp.read(str(ck))[-1]  # (batch 1's entry opened the ledger, with no key yet)
    assert last.batch_id == PAUSED_AFTER and last.keys == ("2026-03-15T10:00:00",)
    progressed = [r["batchId"] for r in progress.read_progress(str(ck))]
    assert PAUSED_AFTER not in progressed, "killed after the entry, before its progress line"
    # Spark plans the no-data batch FILES (watermark 15:10) some 40 ms after batch 5's commit;
    # a kill that lands after that leaves it to the rerun, which then completes 13:00 as well.
    planned = {int(p.name) for p in (ck / "offsets").iterdir() if p.name.isdigit()}
    assert max(planned) in (FILES - 1, FILES), sorted(planned)
    last_hour = 13 if FILES in planned else 12

    again = cli("sessions", tmp_path, specs, "run")
    _, err = again.communicate(timeout=900)
    assert again.returncode == 0, err[-800:]

    entries = cp.read(str(ck))
    keys = [k for e in entries for k in e.keys]
    # Batch 5 ran with the watermark batch 4 left, 14:10 (14:20 - 10 minutes): every hour ending
    # by 14:10 - the 30-minute gap is complete, 10:00 to 12:00 (13:00 needs 14:30); the no-data
    # batch 6, where the victim planned it, runs at 15:10 and completes 13:00 too.
    assert keys == [f"2026-03-15T{h}:00:00" for h in range(10, last_hour + 1)], entries
    assert [e.seq for e in entries] == list(range(len(entries)))
    final = sessions_by_hour(out)
    for e in entries:
        seen = sessions_by_hour(out, version_at(out, e.written_at))
        for k in e.keys:
            assert final[k] and seen.get(k) == final[k], f"{k} announced before its rows: {e}"

    # Run again with nothing new: nothing is announced twice.
    monkeypatch.setenv("STATEKEEPER_CHECKPOINT_ROOTS", str(tmp_path))
    spec = load_spec("sessions", specs).with_overrides(
        input=str(tmp_path / "land"), output=str(out), checkpoint=str(ck)
    )
    settles = float(definition("sessions").settles_after(spec))
    assert catch_up(spec, settles) is None and cp.read(str(ck)) == entries
