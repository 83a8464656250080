"""The freshness bench's clock: a marker is visible at the modification time of the Delta commit
that added a data file holding it, and only whole commits are read."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bench import freshness
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
    seen = freshness.Visible(table)
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
    text = freshness.table([row])
    assert "p50 <= 1.5 s" in text
    assert "files  ours" in text
    assert "addBatch=0.5" in text


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
