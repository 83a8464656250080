"""The freshness bench's clock: a marker is visible at the modification time of the Delta commit
that added a data file holding it, and only whole commits are read."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bench import freshness, freshness_report
from bench.landing_schedule import landing_offsets

pytestmark = pytest.mark.unit


def _commit(table: Path, version: int, files: dict[str, list[str]], at: float) -> None:
    log = table / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"commitInfo": {"operation": "MERGE"}})]
    for name, users in files.items():
        pq.write_table(pa.table({"user_id": users}), table / name)
        lines.append(json.dumps({"add": {"path": name.replace(" ", "%20"), "dataChange": True}}))
    commit = log / f"{version:020d}.json"
    commit.write_text("\n".join(lines) + "\n")
    os.utime(commit, (at, at))


def test_markers_take_the_time_of_the_first_commit_holding_them(tmp_path: Path) -> None:
    table = tmp_path / "out"
    _commit(table, 0, {"a.parquet": ["u1", "m00000"]}, 100.0)
    seen = freshness_report.Visible(table)
    seen.poll()
    assert seen.seen == {"m00000": 100.0}
    # a later commit rewriting the same row (MERGE) does not move its first visible time
    _commit(table, 1, {"b b.parquet": ["m00000", "m00001"], "c.parquet": ["u2"]}, 105.0)
    _commit(table, 2, {"d.parquet": ["m00002"]}, 107.5)
    seen.poll()
    assert seen.seen == {"m00000": 100.0, "m00001": 105.0, "m00002": 107.5}
    assert seen.next_version == 3


def test_lines_carry_one_fresh_marker_each() -> None:
    users = [json.loads(x)["user_id"] for x in freshness.lines_for(7, 20)]
    assert len(users) == 21
    assert [u for u in users if u.startswith("m")] == [freshness.marker(7)]


def test_summary_row_names_both_targets() -> None:
    row = {
        "input": "files",
        "name": "ours",
        "window": "start",
        "markers": 30,
        "of": 30,
        "p50": 1.2,
        "p95": 2.5,
        "max": 2.9,
        "batch_p50": 0.8,
        "parts_p50": {"addBatch": 0.5},
        "nothing_due_p50": None,
        "nothing_due_batches": 0,
        "batches": 40,
    }
    text = freshness_report.table([row, {**row, "window": "later", "p50": 0.9}])
    assert "p50 <= 1.5 s" in text
    assert "files  ours" in text
    assert "addBatch=0.5" in text
    start, later = text.splitlines()[-2:]
    assert "start" in start and "1.2" in start
    assert "later" in later and "0.9" in later


def test_the_exactly_once_built_in_is_a_contender_and_a_mode_is_checked() -> None:
    # The built-in doing the same work as ours (Delta's idempotent MERGE) runs beside the plain
    # one; a mistyped mode is refused before Spark starts, not run as the plain pipeline.
    from bench import freshness_builtin

    assert freshness.CONTENDERS == ("ours", "built-in", freshness.EXACTLY_ONCE)
    with pytest.raises(SystemExit, match="exactly-once"):
        freshness_builtin.main("in", "out", "ckpt", "1s", "exactly_once")


def test_markers_land_at_every_point_of_the_trigger_period() -> None:
    """Spark starts a processing-time batch at whole multiples of the trigger on the wall clock:
    markers must not all land at one point of that period (each would wait the same part of it,
    set by when the run began), but over the whole of it, evenly, still ``every`` apart."""
    every, trigger, total = 2.0, 1.0, 35
    offsets = landing_offsets(total, every, trigger)
    assert offsets[0] == 0.0
    assert all(n * every <= o < n * every + trigger for n, o in enumerate(offsets))
    phases = sorted(o % trigger for o in offsets)
    wrap = trigger + phases[0] - phases[-1]  # from the last phase round to the first
    gaps = [b - a for a, b in zip(phases, phases[1:], strict=False)] + [wrap]
    assert max(gaps) < 3 / total  # no part of the period left out
    quarters = [sum(1 for p in phases if q / 4 <= p < (q + 1) / 4) for q in range(4)]
    assert min(quarters) >= total // 4 - 1, quarters


def test_markers_closer_than_the_trigger_stay_in_order() -> None:
    offsets = landing_offsets(20, 0.5, 1.0)
    assert offsets == sorted(offsets)
    assert all(b - a > 0 for a, b in zip(offsets, offsets[1:], strict=False))


def test_the_start_and_later_windows_split_the_markers_after_the_warm_up() -> None:
    landed = {freshness.marker(n): 100.0 + 2 * n for n in range(12)}
    got = freshness_report.windows(landed, warm_up=2, start=4)
    assert got == [
        ("start", [freshness.marker(n) for n in range(2, 6)]),
        ("later", [freshness.marker(n) for n in range(6, 12)]),
    ]
    # no later markers (a smoke run): one window
    assert [w for w, _ in freshness_report.windows(landed, warm_up=2, start=10)] == ["start"]


def test_each_window_reports_its_own_markers_and_batches(tmp_path: Path) -> None:
    """A run whose first batches are slow: the start window shows them, the later one does not."""
    from datetime import UTC, datetime

    run = tmp_path / "builtin"
    run.mkdir()
    base = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    landed = {freshness.marker(n): base + 2 * n for n in range(8)}
    for n, (m, at) in enumerate(sorted(landed.items())):
        _commit(run / "out", n, {f"f{n}.parquet": [m]}, at + (3.0 if n < 4 else 1.0))
    recs = [  # batch n starts as marker n - 1 lands (batch 0, the first, is not counted)
        {
            "batchId": n,
            "numInputRows": 21,
            "timestamp": datetime.fromtimestamp(base + 2 * (n - 1), UTC).isoformat(),
            "durationMs": {"triggerExecution": 2500 if n < 5 else 900},
        }
        for n in range(9)
    ]
    lines = "".join(json.dumps(r) + "\n" for r in recs)
    (run / freshness_report.BUILTIN_PROGRESS).write_text(lines)
    start, later = freshness_report.summarise("built-in", run, False, landed, 0, 4)
    assert (start["window"], start["markers"], start["p50"]) == ("start", 4, 3.0)
    assert (later["window"], later["markers"], later["p50"]) == ("later", 4, 1.0)
    assert start["batch_p50"] == 2.5
    assert later["batch_p50"] == 0.9
