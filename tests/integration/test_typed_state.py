"""A typed state row with arrays and structs goes through applyInPandasWithState and back, and
Spark's ``statestore`` reader shows its fields: what the typed state of sessions and fraud_alerts
rests on (PySpark 4.2 needs spark_jobs.runtime.pydaemon for arrays in the state schema)."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.integration

STATE = "n bigint, xs array<bigint>, items array<struct<t:bigint,s:string>>, run struct<c:bigint>"


def test_array_and_struct_state_round_trips(spark, tmp_path):
    def count(key, pdfs, state):
        import pandas as pd

        n = sum(len(p) for p in pdfs)
        prev = state.get if state.exists else (0, [], [], None)
        seen = json.dumps([list(i) for i in prev[2]])  # what the previous run stored, as read
        items = [tuple(i) for i in prev[2]] + [(n, f"x{n}")]
        state.update((prev[0] + n, [*prev[1], n], items, {"c": n}))
        yield pd.DataFrame({"k": [key[0]], "n": [prev[0] + n], "seen": [seen]})

    land, out, ckpt = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    land.mkdir()
    for run, lines in enumerate((2, 3)):
        (land / f"{run}.json").write_text('{"k": "a"}\n' * lines)
        q = (
            spark.readStream.schema("k string")
            .json(str(land))
            .groupBy("k")
            .applyInPandasWithState(
                count, "k string, n long, seen string", STATE, "append", "NoTimeout"
            )
            .writeStream.format("json")
            .option("path", str(out))
            .option("checkpointLocation", str(ckpt))
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination()
    rows = sorted((r["n"], r["seen"]) for r in spark.read.json(str(out)).collect())
    assert rows == [(2, "[]"), (5, '[[2, "x2"]]')]
    (stored,) = spark.read.format("statestore").load(str(ckpt)).collect()
    value = stored["value"]["groupState"]
    assert value["n"] == 5 and value["xs"] == [2, 3] and value["run"]["c"] == 3
    assert [(i["t"], i["s"]) for i in value["items"]] == [(2, "x2"), (3, "x3")]
