"""``python -m bench``'s closing summary prints the whole-process rows of ``run sessions`` on
files and on a Kafka topic, each beside the built-in pipeline measured in the same run."""

from __future__ import annotations

import pytest

from bench.__main__ import BENCHES, table

pytestmark = pytest.mark.unit


def _row(where: str, ratio: float, same: bool) -> dict:
    return {
        "job": "sessions",
        "input": where,
        "events": 1_000_000,
        "keys": 100_000,
        "run_seconds": [20.0, 21.0],
        "builtin_seconds": [30.0, 31.0],
        "run_events_per_s": 48_000,
        "builtin_events_per_s": 32_000,
        "ratio_vs_builtin": ratio,
        "same_table_as_builtin": same,
    }


def test_summary_has_a_files_row_and_a_kafka_row_with_the_builtin_side():
    assert "e2e-kafka" in BENCHES  # make bench (every bench) runs it
    out = table({"e2e": [_row("files", 1.5, True)], "e2e-kafka": _row("kafka", 1.6, False)})
    rows = [line for line in out.splitlines() if line.startswith("process sessions")]
    assert len(rows) == 2
    files, kafka = rows
    assert "files" in files and "1.50x" in files and "same table: True" in files
    assert "kafka" in kafka and "1.60x" in kafka and "same table: False" in kafka
    assert "built-in [30.0, 31.0] s" in kafka
