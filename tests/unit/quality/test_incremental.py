"""When a quality run can no longer read the versions since its last one in place
(:func:`spark_jobs.quality.incremental.past_retention`), from the Delta log alone."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from spark_jobs.contract import delta
from spark_jobs.quality.incremental import past_retention

pytestmark = pytest.mark.unit

DAY = 86400.0


def table(path, configuration=None) -> tuple[str, float]:
    """A two-version table; its version 0's commit time (epoch seconds)."""
    uri = str(path)
    for n in (1, 2):
        write_deltalake(uri, pa.table({"n": [n]}), mode="append", configuration=configuration)
    c = delta.commit(uri, 0)
    assert c is not None
    return uri, c.info["timestamp"] / 1000.0


def test_delta_default_retention_with_an_hour_of_margin(tmp_path):
    uri, written = table(tmp_path / "t")
    assert past_retention(uri, 0) is None
    assert past_retention(uri, 0, now=written + 7 * DAY - 3601) is None
    why = past_retention(uri, 0, now=written + 7 * DAY - 3599)
    assert why is not None and why.startswith(f"version 0 of {uri} was written 7.0 days ago")
    assert "(Delta's default of 7 days)" in why


def test_the_tables_own_retention_decides(tmp_path):
    uri, written = table(tmp_path / "t", {"delta.deletedFileRetentionDuration": "interval 2 hours"})
    assert past_retention(uri, 0, now=written + 3599) is None
    why = past_retention(uri, 0, now=written + 3601)
    assert why is not None and "1.0 hours ago" in why and "(interval 2 hours)" in why
    seconds, written = table(
        tmp_path / "s", {"delta.deletedFileRetentionDuration": "interval 10 seconds"}
    )
    assert past_retention(seconds, 0, now=written + 4) is None
    assert past_retention(seconds, 0, now=written + 6) is not None  # half of it, as a margin


def test_a_version_gone_from_the_log(tmp_path):
    uri, _ = table(tmp_path / "t")
    DeltaTable(uri).create_checkpoint()  # the log's cleanup removes commits a checkpoint holds
    (tmp_path / "t" / "_delta_log" / f"{0:020d}.json").unlink()
    assert past_retention(uri, 0) == f"version 0 of {uri} is no longer in its log"
    assert past_retention(uri, 1) is None
