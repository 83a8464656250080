"""The progress listener as Spark calls it, on a real query: a batch's record is the JSON Spark
writes for that batch's progress, taken in one call, and PySpark's field-by-field
``StreamingQueryProgress`` (tenths of a second per batch on the listener's thread) is never
built for it."""

import json
import time

import pytest

from spark_jobs.runtime import progress

pytestmark = pytest.mark.integration


def _records(ckpt: str, wanted: int, timeout: float = 30.0) -> list[dict]:
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = progress.read_progress(ckpt)
        if len(got) >= wanted:
            return got
        time.sleep(0.05)
    raise AssertionError(f"{wanted} batch record(s) expected, found {progress.read_progress(ckpt)}")


def test_a_batch_record_is_sparks_progress_json_taken_whole(spark, tmp_path, monkeypatch):
    from pyspark.sql.streaming import listener as pyspark_listener

    built: list[int] = []
    field_by_field = pyspark_listener.StreamingQueryProgress.fromJObject

    def counted(cls, jprogress):
        built.append(1)
        return field_by_field(jprogress)

    monkeypatch.setattr(
        pyspark_listener.StreamingQueryProgress, "fromJObject", classmethod(counted)
    )
    land = tmp_path / "land"
    land.mkdir()
    (land / "a.txt").write_text("one\ntwo\nthree\n")
    ckpt = str(tmp_path / "ckpt")
    listener = progress.make_listener("listened", {"listened": ckpt})
    spark.streams.addListener(listener)
    try:
        query = (
            spark.readStream.text(str(land))
            .writeStream.queryName("listened")
            .format("noop")
            .option("checkpointLocation", ckpt)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        (record,) = _records(ckpt, 1)
        assert built == []  # nothing built the Python object for the listener
        # (lastProgress builds it, so only now)
        spark_json = json.loads(query.lastProgress.json)
    finally:
        spark.streams.removeListener(listener)
    logged = {k: v for k, v in record.items() if k != "statekeeper"}
    assert logged == spark_json
    assert logged["numInputRows"] == 3 and logged["batchId"] == 0
    assert record["statekeeper"]["job"] == "listened"
