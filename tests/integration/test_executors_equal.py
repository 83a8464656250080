"""The per-key and the batched executor, through the real runner, on the same generated inputs
(late, duplicated, bad and out-of-order events; the clock jumping between calls so most state
times out), over two successive available-now runs (the second closing what the first left open): every output row identical."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from spark_jobs.checkpoints.inspect import state_rows
from spark_jobs.contract.spec import load_spec
from spark_jobs.generate import generate
from spark_jobs.jobs.runner import run_job
from spark_jobs.runtime.progress import read_progress

pytestmark = pytest.mark.integration

KIND = {"sessions": "clickstream", "fraud_alerts": "auth"}


def _spec(job: str, tmp: Path, executor: str, buckets: int = 8):
    spec = load_spec(job).with_overrides(
        input=str(tmp / "land"),
        output=str(tmp / executor / "out"),
        checkpoint=str(tmp / executor / "ckpt"),
        trigger="available-now",
    )
    # two shuffle partitions whatever the shipped spec says (tests/integration/jobkit.py)
    return replace(
        spec, executor=executor, shuffle_partitions=2, params={**spec.params, "buckets": buckets}
    )


def _rows(spark, uri: str) -> list[tuple]:
    df = spark.read.format("delta").load(uri)
    return sorted(tuple(tuple(v) if isinstance(v, list) else v for v in r) for r in df.collect())


def _keys(checkpoint: str) -> list[tuple[int, dict]]:
    records = [(r["batchId"], r.get("keys")) for r in read_progress(checkpoint)]
    assert records and all(k is not None for _, k in records), "a batch without key metrics"
    assert any(k["expired"] for _, k in records) and any(k["updated"] for _, k in records)
    return records


@pytest.mark.parametrize("job", ["sessions", "fraud_alerts"])
def test_executors_give_identical_rows(spark, tmp_path, job):
    per_key, batched = _spec(job, tmp_path, "per-key"), _spec(job, tmp_path, "batched")
    for call in range(2):
        generate(
            KIND[job],
            str(tmp_path / "land"),
            events=600,
            keys=60,
            seed=7,
            late_rate=0.03,
            bad_rate=0.01,
            dup_rate=0.01,
        )
        a = run_job(per_key, spark=spark)
        b = run_job(batched, spark=spark)
        assert a.input_rows == b.input_rows and a.dropped_by_watermark == b.dropped_by_watermark
        expected, got = _rows(spark, per_key.output), _rows(spark, batched.output)
        assert got == expected, f"run {call + 1}: outputs differ"
        # `checkpoint inspect --rows`: the buckets hold as many keys as the per-key job has rows
        (bucketed,) = state_rows(batched.checkpoint)
        assert bucketed["keys"] == a.state_rows > 0 and bucketed["rows"] == b.state_rows <= 8
        assert 0 < max(bucketed["keys_per_bucket"]) <= bucketed["keys"]
        # key-level metrics (docs/contracts.md §4): buckets count the keys the per-key store holds.
        # Batch by batch they may differ: the batched executor settles what a batch's own events
        # prove due in that batch (keyed.settled_until_ms), the per-key one a batch later; the
        # same rows, the same keys left at the end of each run.
        assert a.state_keys == b.state_keys == bucketed["keys"]
        ka, kb = _keys(per_key.checkpoint), _keys(batched.checkpoint)
        assert ka[-1][1]["total"] == kb[-1][1]["total"] == a.state_keys
        assert sum(k["emitted"] for _, k in ka) == sum(k["emitted"] for _, k in kb) == len(got)
    assert len(expected) > 10 and a.dropped_by_watermark > 0
