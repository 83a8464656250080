"""The two drivers :mod:`spark_jobs.runtime.jvm_archive` starts in child processes: the training
run whose JVM dumps the archive as it exits, and the check that a driver starts and runs a query
with a new archive mapped. (A module of their own: they build a session, and the session module
reads the archive's options.)"""

from __future__ import annotations

import sys
from pathlib import Path


def train() -> None:
    """The work whose classes are archived: a session, a query, a Delta write and read, a
    streaming query with state. Runs in a child process; its JVM dumps when it exits."""
    import tempfile

    from pyspark.sql import functions as F

    from spark_jobs.runtime.session import build_session

    spark = build_session("statekeeper-jvm-archive")
    with tempfile.TemporaryDirectory() as tmp:
        spark.range(1000).groupBy((F.col("id") % 7).alias("k")).count().collect()
        spark.range(10).write.format("delta").save(f"{tmp}/t")
        spark.read.format("delta").load(f"{tmp}/t").count()
        (Path(tmp) / "in").mkdir()
        (Path(tmp) / "in" / "a.json").write_text('{"k": "a", "t": "2026-01-01T00:00:00Z"}\n')
        lines = spark.readStream.text(f"{tmp}/in")
        parsed = lines.select(F.from_json("value", "k string, t timestamp").alias("j"))
        parsed = parsed.select("j.*")
        q = (
            parsed.withWatermark("t", "1 minute")
            .dropDuplicates(["k"])
            .writeStream.option("checkpointLocation", f"{tmp}/ck")
            .trigger(availableNow=True)
            .foreachBatch(lambda df, _id: df.write.format("delta").mode("append").save(f"{tmp}/o"))
            .start()
        )
        q.awaitTermination()
        jvm = spark._jvm
        assert jvm is not None  # a classic (not Connect) session
        pid = jvm.java.lang.ProcessHandle.current().pid()
        spark.stop()
    print(f"jvm-pid {pid}", flush=True)


def check() -> None:
    from spark_jobs.runtime.session import build_session

    spark = build_session("statekeeper-jvm-archive-check")
    assert spark.range(10).count() == 10
    spark.stop()
    print("archive ok", flush=True)


if __name__ == "__main__":
    commands = {"train": train, "check": check}
    if sys.argv[1:2] == [] or sys.argv[1] not in commands:
        sys.exit("usage: python -m spark_jobs.runtime.jvm_archive_drivers train | check")
    commands[sys.argv[1]]()
