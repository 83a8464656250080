"""``python -m bench --smoke`` end to end in its own process: it prints the ratio table, the two
executors give identical outputs, the built-in session_window job writes the same table as the
batched executor, and it writes its JSON results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def test_bench_smoke(tmp_path):
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'plugins'}", "STATEKEEPER_HOME": str(ROOT)}
    done = subprocess.run(
        # the checkpoint and quality helpers have their own tests: skipped here to stay under 3 minutes
        [
            sys.executable,
            "-m",
            "bench",
            "--smoke",
            "--skip-helpers",
            "--work",
            str(tmp_path / "bench"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,  # a hang guard, not a speed test
    )
    out = done.stdout
    assert done.returncode == 0, done.stderr[-2000:]
    assert "== summary" in out and "vs built-in" in out, out
    summary = out.split("== summary", 1)[1]
    assert "sessions" in summary and "fraud_alerts" in summary
    assert (
        summary.count("identical outputs: True") == 2 and "identical outputs: False" not in summary
    )
    assert "catch-up" in summary and "bounded: True" in summary
    result = json.loads((ROOT / "bench" / "results" / "smoke.json").read_text())
    sessions = next(r for r in result["throughput"] if r["job"] == "sessions")
    assert sessions["batched"]["input_rows"] == sessions["builtin"]["input_rows"] > 0
    # the built-in session_window job writes the very table the batched executor does
    assert sessions["same_table_as_builtin"] is True
    assert sessions["batched"]["rows_out"] == sessions["builtin"]["rows_out"] > 0
    assert result["catchup"]["state_keys_end"] > 0
