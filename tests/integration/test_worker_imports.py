"""Spark's Python workers (forked by spark_jobs.runtime.pydaemon) import the installed, compiled
pyspark and py4j, and have none of Spark's zips on their path (see spark_jobs.runtime.worker_path)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration


def test_workers_import_the_installed_pyspark(spark):
    def where(_rows):
        import sys

        import py4j
        import pyspark

        yield (
            pyspark.__file__,
            py4j.__file__,
            [p for p in sys.path if p.endswith((".zip", ".jar"))],
        )

    import py4j
    import pyspark

    [(worker_pyspark, worker_py4j, archives)] = (
        spark.sparkContext.parallelize([0], 1).mapPartitions(where).collect()
    )
    assert worker_pyspark == pyspark.__file__  # the driver's: site-packages, not pyspark.zip
    assert worker_py4j == py4j.__file__
    assert not [a for a in archives if "pyspark" in a], archives
