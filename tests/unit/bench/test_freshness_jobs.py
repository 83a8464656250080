"""The per-batch job breakdown's summary: medians skip the first batch (a fresh process's start-up)."""

from __future__ import annotations

import pytest

from bench import freshness_jobs

pytestmark = pytest.mark.unit


def _batch(n: int, seconds: float, writes: float, jobs: int) -> dict:
    return {
        "batch": n,
        "seconds": seconds,
        "writes": writes,
        "jobs": [f"job {i}" for i in range(jobs)],
    }


def test_summary_has_a_row_per_batch_and_the_median_after_the_first() -> None:
    text = freshness_jobs.summary(
        [
            _batch(0, 50.0, 26.0, 7),
            _batch(1, 29.0, 15.5, 8),
            _batch(2, 21.0, 12.0, 7),
            _batch(3, 17.0, 10.0, 6),
        ]
    )
    lines = text.splitlines()
    assert lines[0] == "batch 0: 50.00 s, in writes 26.00 s, 7 Spark jobs"
    assert len(lines) == 5
    assert lines[-1] == "median after the first: 21.00 s, in writes 12.00 s, 7 Spark jobs"


def test_summary_of_one_batch_is_that_batch() -> None:
    text = freshness_jobs.summary([_batch(0, 5.0, 2.0, 3)])
    assert text.splitlines()[-1] == "median after the first: 5.00 s, in writes 2.00 s, 3 Spark jobs"
