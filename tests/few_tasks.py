"""The Spark settings of every test JVM (the shared ``spark`` fixture, and the CLI processes a
test starts where it passes them): few tasks, same results, on a machine of two cores."""

FEW_TASKS = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    # the file listing of Delta's VACUUM: 10000 tasks by default, 40-95 s for a VACUUM of a
    # 14-file table on two cores against 3 s with 2
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "2",
}
