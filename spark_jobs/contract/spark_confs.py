"""The Spark confs a job's spec decides (state store, partitions, retention), declared once.

The session builder sets them and the checkpoint validator compares them with what a checkpoint
pinned (a read of files, no Spark), so they live in the contract: both read the same mapping.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spark_jobs.contract import table_settings as tables

if TYPE_CHECKING:
    from spark_jobs.contract.spec import JobSpec

STATE_STORE_PROVIDERS = {
    "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    "hdfs": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
}
CHANGELOG_CONF = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"


def spec_confs(spec: JobSpec) -> dict[str, str]:
    """The Spark confs a job's spec decides (state store, partitions, retention)."""
    return {
        "spark.sql.shuffle.partitions": str(spec.shuffle_partitions),
        "spark.sql.streaming.stateStore.providerClass": STATE_STORE_PROVIDERS[spec.state_store],
        CHANGELOG_CONF: str(spec.changelog_checkpointing).lower(),
        "spark.sql.streaming.minBatchesToRetain": str(spec.min_batches_to_retain),
        # the tables this job creates keep what its spec's tables.retention says
        **tables.session_defaults(spec.tables.retention),
    }
