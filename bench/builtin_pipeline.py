"""``python -m bench.builtin_pipeline JOB INPUT OUTPUT CHECKPOINT [VARIANT]``: the pipeline a
user would hand-write with Spark's built-ins for ``sessions`` or ``fraud_alerts``, as a whole
process, to time against ``python -m spark_jobs run JOB``: Spark's JSON reader with the kind's
schema and a corrupt-record column (or, for a ``kafka://HOST:PORT/TOPIC`` INPUT, Spark's Kafka
source and ``from_json`` with the same schema and column), the built-in operator (session_window,
or windowed failure counts; VARIANT names another of :data:`bench.builtins.PIPELINES`, e.g.
``fraud_alerts_sliding``), a Delta sink, RocksDB, the job spec's shuffle partitions,
availableNow. Prints one JSON line."""

from __future__ import annotations

import json
import sys
import time
from typing import Any


def _lines(spark: Any, spec: Any, inp: str, schema: str) -> Any:
    """Typed rows and ``_corrupt`` of the input: files through the JSON reader, a topic through
    the Kafka source (from the earliest offset, the spec's records per batch) and ``from_json``."""
    from pyspark.sql import functions as F

    from spark_jobs.contract import kafka

    if not kafka.is_kafka(inp):
        return (
            spark.readStream.schema(schema)
            .option("columnNameOfCorruptRecord", "_corrupt")
            .option("pathGlobFilter", "*.json*")
            .json(inp)
        )
    target = kafka.parse(inp)
    records = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", target.bootstrap)
        .option("subscribe", target.topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", spec.max_offsets_per_trigger)
        .load()
    )
    value = F.col("value").cast("string")
    opts = {"columnNameOfCorruptRecord": "_corrupt"}
    return records.select(F.from_json(value, schema, opts).alias("e")).select("e.*")


def main(argv: list[str]) -> int:
    job, inp, out, ckpt, *variant = argv
    started = time.time()
    from pyspark.sql import functions as F

    from bench import builtins
    from spark_jobs.contract.spec import load_spec
    from spark_jobs.io import event_kinds as ev
    from spark_jobs.runtime.session import build_session

    spec = load_spec(job)
    kind = spec.kinds[0]
    spark = build_session(f"builtin-{job}", spec=spec)
    schema = f"{ev.spark_schema(kind)}, _corrupt string"
    lines = _lines(spark, spec, inp, schema)
    good = lines.where(F.col("_corrupt").isNull()).drop("_corrupt")
    df = builtins.PIPELINES[variant[0] if variant else job](good, spec)
    q = (
        df.writeStream.format("delta")
        .outputMode("append")
        .option("checkpointLocation", ckpt)
        .trigger(availableNow=True)
        .start(out)
    )
    q.awaitTermination()
    rows = sum(int(p["numInputRows"]) for p in q.recentProgress)
    print(json.dumps({"job": job, "input_rows": rows, "seconds": round(time.time() - started, 2)}))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
