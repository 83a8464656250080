"""Delta's log store for local tables (``spark_jobs/io/jvm/statekeeper/LocalListLogStore.java``):
the session gives every local table it, and it lists a log as Delta's own store does, reading
the names of the folder before the status of the few entries it keeps.

Delta's own store reads every entry's status: a log of a day of one-second batches (~360,000
entries) cost it seconds a listing (``bench/delta_log_listing.py`` measures it)."""

from __future__ import annotations

import pytest
from py4j.protocol import Py4JJavaError

from spark_jobs.contract import jvm

pytestmark = pytest.mark.integration


def _listing(spark, store, log_dir, start: str) -> list[tuple[str, int, int]]:
    """(name, length, mtime) of what ``store`` lists in ``log_dir`` from ``start`` on."""
    path = spark._jvm.org.apache.hadoop.fs.Path(f"file:{log_dir}/{start}")
    found = store.listFrom(path, spark._jsc.hadoopConfiguration())
    out = []
    while found.hasNext():
        s = found.next()
        out.append((s.getPath().getName(), s.getLen(), s.getModificationTime()))
    return out


def test_a_local_table_of_the_session_lists_its_log_with_the_projects_store(spark, tmp_path):
    table = tmp_path / "t"
    spark.range(3).write.format("delta").save(str(table))
    j = spark._jvm
    log = j.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, str(table))

    delegate = log.store().getDelegate(j.org.apache.hadoop.fs.Path(f"file:{table}/_delta_log"))

    # a Java log store reaches Delta wrapped in an adaptor that holds it
    store = delegate.logStoreImpl()
    assert store.getClass().getName() == jvm.LOG_STORE_CLASS
    # and commits as the store Delta chooses for local files does (only ``listFrom`` differs)
    assert j.io.delta.storage.HDFSLogStore._java_lang_class.isInstance(store)


def test_the_store_lists_what_deltas_own_store_lists(spark, tmp_path):
    table = tmp_path / "t"
    for i in range(12):  # a log checkpoint at version 10, commits after it
        spark.range(i, i + 1).write.format("delta").mode("append").save(str(table))
    log_dir = table / "_delta_log"
    (log_dir / ".00000000000000000012.json.5f1c.tmp").write_text("{}")  # a commit being written
    (log_dir / "_last_checkpoint.bak").write_text("{}")  # a stranger: listed by both
    j = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    ours = j.statekeeper.LocalListLogStore(conf)
    deltas = j.io.delta.storage.HDFSLogStore(conf)  # Delta's choice for local files

    for start in (
        "00000000000000000000",
        "00000000000000000007",
        "00000000000000000010",
        "00000000000000000011.json",
        "00000000000000000099",
        "_",
        "-",
    ):
        want = _listing(spark, deltas, log_dir, start)
        assert _listing(spark, ours, log_dir, start) == want, start
    everything = _listing(spark, ours, log_dir, "-")  # "-" sorts before "." and every digit
    names = [n for n, _, _ in everything]
    assert "00000000000000000010.checkpoint.parquet" in names
    assert ".00000000000000000012.json.5f1c.tmp" in names  # hidden, but not a checksum
    assert not any(n.endswith(".crc") and n.startswith(".") for n in names)
    assert len(list(log_dir.glob(".*.crc"))) > 12  # Hadoop's checksums were there, left out

    for store in (ours, deltas):  # a table that is not there: the same error for Delta
        with pytest.raises(Py4JJavaError, match="FileNotFoundException"):
            _listing(spark, store, tmp_path / "none" / "_delta_log", "0")
