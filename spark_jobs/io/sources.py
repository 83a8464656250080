"""Inputs read as a stream of raw lines with where each came from: landing folders of JSON-lines
files (the file's path), or Kafka topics (``kafka://TOPIC/PARTITION/OFFSET``, spark_jobs.kafka)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from spark_jobs.contract import paths
from spark_jobs.contract.errors import UserError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from spark_jobs.contract.spec import JobSpec

# Spark's file source forgets, and then never reads, a file whose modification time is more than
# maxFileAge (default 7 days) older than the newest file it has seen: a landing file copied with
# its mtime (cp -p, rsync -t, tar x) was skipped for ever. Its seen-files map admits a file when
# ``mtime >= newest mtime seen - maxFileAge`` and purges entries below that line; at Long.MaxValue
# ms nothing is ever below it. The cost: the map keeps one entry per file ever read (about 200
# bytes of driver heap each: 1 GB per 5 million files), where it kept the last 7 days' worth;
# the source's log lists every file ever read either way (docs/jobs.md, "Landing files").
MAX_FILE_AGE = f"{2**63 - 1}ms"


def check_input(uri: str, job: str) -> None:
    """A missing or unreadable local landing folder, or a malformed Kafka URI, is a user error,
    said before Spark starts. A topic is not looked up here: that needs the cluster's security
    options, and a topic that does not exist yet is simply empty."""
    from spark_jobs.contract import kafka as kafka_uri

    if kafka_uri.is_kafka(uri):
        kafka_uri.parse(uri)
        return
    local = paths.local_path(uri)
    if local is None:
        return
    if not local.exists():
        raise UserError(
            f"input folder {uri} of job {job} does not exist; generate data into it or pass --input"
        )
    if not local.is_dir():
        raise UserError(f"input {uri} of job {job} is not a folder of JSON-lines files")
    try:
        next(iter(local.iterdir()), None)
    except OSError as exc:
        raise UserError(f"input folder {uri} of job {job} is not readable: {exc.strerror}") from exc


def read_lines(spark: SparkSession, spec: JobSpec, kind: str) -> DataFrame:
    """The stream of (value, source_file) lines of the job's ``kind`` input."""
    from pyspark.sql import functions as F

    from spark_jobs.contract import kafka as kafka_uri
    from spark_jobs.kafka import source as kafka_source

    uri = spec.inputs[kind]
    check_input(uri, spec.name)
    if kafka_uri.is_kafka(uri):
        return kafka_source.read_lines(spark, spec, uri)
    reader = (
        spark.readStream.format("text")
        .option("pathGlobFilter", paths.LANDING_GLOB)
        .option("maxFileAge", MAX_FILE_AGE)
        # available-now honours it too: a backlog is read in several batches, each of which ends
        .option("maxFilesPerTrigger", spec.max_files_per_trigger)
    )
    return reader.load(uri).select("value", F.col("_metadata.file_path").alias("source_file"))
