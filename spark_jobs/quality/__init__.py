"""Data quality on the jobs' Delta outputs with Great Expectations 1.x (docs/quality.md).

``run_quality(spec, table=None, full=False, spark=None) -> QualityResult`` is the Python API;
``python -m spark_jobs quality JOB`` the command line. Nothing here imports great_expectations or
pyspark at import time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spark_jobs.quality.runner import QualityResult


def run_quality(
    spec: Any, table: str | None = None, full: bool = False, spark: Any = None
) -> QualityResult:
    from spark_jobs.quality.runner import run_quality as _run

    return _run(spec, table=table, full=full, spark=spark)


__all__ = ["run_quality"]
