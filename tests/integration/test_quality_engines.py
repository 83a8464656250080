"""The pandas engine (deltalake + GX pandas, no JVM) gives Spark's verdicts on the same tables.

Tables are written by Spark (delta-spark, as the jobs write them), then grown with defective
rows, a DELETE and enough commits for a Delta checkpoint; two identical copies are checked, one
per engine: first run, incremental run and full run agree check by check. deltalake 1.6.6 cannot
read deletion vectors: such a table goes to Spark on ``auto`` and is refused on ``pandas``.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from test_quality import DEFECTS, clean_row, log_progress, minutes, quarantine, write

from spark_jobs.contract.errors import UserError
from spark_jobs.contract.spec import load_spec
from spark_jobs.quality.runner import run_quality

pytestmark = pytest.mark.integration


def verdicts(result) -> tuple:
    checks = [(r.check, r.status, r.observed, r.unexpected_count) for r in result.rows]
    batches = [(b["suite"], b["versions"], b["mode"], b["rows"]) for b in result.batches]
    return result.status, result.exit_code, batches, checks


def both(tmp_path: Path, job: str, **kw) -> tuple:
    out = []
    for engine in ("pandas", "spark"):
        spec = load_spec(job).with_overrides(
            output=str(tmp_path / engine / job), checkpoint=str(tmp_path / "ck")
        )
        res = run_quality(spec, engine=engine, **kw)
        assert res.engine == engine
        out.append(verdicts(res))
    return tuple(out)


# user_counts: the upsert slice and its schema checks; the one case proven here (sessions and
# order_payments ran into the time limit on a loaded machine and are not in the suite yet)
@pytest.mark.parametrize("job", ["user_counts"])
def test_pandas_and_spark_engines_give_the_same_verdicts(spark, tmp_path, job):
    table = tmp_path / "pandas" / job
    write(spark, job, table, [clean_row(job, i) for i in range(10)])
    quarantine(spark, table, 2)
    log_progress(tmp_path / "ck", read=200, watermark=minutes(60))
    shutil.copytree(table, tmp_path / "spark" / job)
    pandas_first, spark_first = both(tmp_path, job)
    assert pandas_first == spark_first and pandas_first[0] == "pass"

    rows, expected = DEFECTS[job]
    for engine in ("pandas", "spark"):
        uri = str(tmp_path / engine / job)
        spark.sql(f"ALTER TABLE delta.`{uri}` SET TBLPROPERTIES ('delta.checkpointInterval' = '2')")
        write(spark, job, Path(uri), [{**clean_row(job, 20 + i), **d} for i, d in enumerate(rows)])
        spark.sql(
            f"DELETE FROM delta.`{uri}` WHERE {_first_key(job)} = '{_first_key_of_row_5(job)}'"
        )
    assert list((table / "_delta_log").glob("*.checkpoint.parquet"))
    pandas_inc, spark_inc = both(tmp_path, job)
    assert pandas_inc == spark_inc
    assert {c: s for c, s, _, _ in pandas_inc[3] if s != "pass"}.items() >= expected.items()
    assert pandas_inc[1] == 1  # a fail-severity expectation failed on both engines

    pandas_full, spark_full = both(tmp_path, job, full=True)
    assert pandas_full == spark_full
    assert pandas_full[2][0][3] == 10 + len(rows) - 1  # the deleted row is gone on both

    uri = str(tmp_path / "spark" / job)
    spark.sql(
        f"ALTER TABLE delta.`{uri}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
    )
    spec = load_spec(job).with_overrides(output=uri, checkpoint=str(tmp_path / "ck"))
    assert run_quality(spec, full=True).engine == "spark"
    with pytest.raises(UserError, match="deletionVectors"):
        run_quality(spec, engine="pandas")


def test_engines_agree_on_an_append_table_with_an_array_column(spark, tmp_path):
    """``sessions``: an array column (handed to GX's pandas engine as tuples, which it can
    fingerprint) and a key written again by a later version (found by re-reading the earlier
    snapshot for the touched keys only). First and incremental runs only: the full run and the
    Delta-feature cases are the test above's."""
    job = "sessions"
    table = tmp_path / "pandas" / job
    write(spark, job, table, [clean_row(job, i) for i in range(10)])
    log_progress(tmp_path / "ck", read=200, watermark=minutes(60))
    shutil.copytree(table, tmp_path / "spark" / job)
    pandas_first, spark_first = both(tmp_path, job)
    assert pandas_first == spark_first and pandas_first[1] == 0

    rows, expected = DEFECTS[job]
    for engine in ("pandas", "spark"):
        write(
            spark,
            job,
            tmp_path / engine / job,
            [{**clean_row(job, 20 + i), **d} for i, d in enumerate(rows)],
        )
    pandas_inc, spark_inc = both(tmp_path, job)
    assert pandas_inc == spark_inc
    assert {c: s for c, s, _, _ in pandas_inc[3] if s != "pass"}.items() >= expected.items()
    unique = next(r for r in pandas_inc[3] if r[0] == "keys: session_id unique")
    assert unique[3] and unique[3] >= 1  # "s3" of the first version, written again


def _first_key(job: str) -> str:
    return {"sessions": "session_id", "user_counts": "user_id", "order_payments": "order_id"}[job]


def _first_key_of_row_5(job: str) -> str:
    return str(clean_row(job, 5)[_first_key(job)])


def test_versions_past_the_retention_and_vacuumed_are_validated_whole(spark, tmp_path):
    """A quality run that lagged past the table's file retention (a paused DAG) while a
    compaction and a VACUUM deleted the files of the versions since its last run: both engines
    failed every run after on files gone (``Cannot time travel beyond
    delta.deletedFileRetentionDuration``, ``Object ... not found``). Now they validate the whole
    table and say why, and the next run within the retention is incremental again."""
    from delta.tables import DeltaTable

    from spark_jobs.contract.table_settings import RETENTION_PROPERTY
    from spark_jobs.quality.incremental import PAST_RETENTION
    from spark_jobs.tables.vacuum import data_files

    job = "sessions"
    rows, expected = DEFECTS[job]
    log_progress(tmp_path / "ck", read=200, watermark=minutes(60))

    def set_retention(table: Path, interval: str) -> None:
        spark.sql(
            f"ALTER TABLE delta.`{table}` SET TBLPROPERTIES ('{RETENTION_PROPERTY}' = '{interval}')"
        )

    first = tmp_path / "pandas" / job
    write(spark, job, first, [clean_row(job, i) for i in range(10)])
    set_retention(first, "interval 1 seconds")
    shutil.copytree(first, tmp_path / "spark" / job)
    assert both(tmp_path, job)[0][2][0][2] == "first run"

    tables = [tmp_path / engine / job for engine in ("pandas", "spark")]
    for table in tables:
        write(spark, job, table, [{**clean_row(job, 20 + i), **d} for i, d in enumerate(rows)])
        spark.sql(f"OPTIMIZE delta.`{table}`")  # the two versions' files are replaced...
    time.sleep(2.0)
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        for table in tables:  # ...and deleted
            DeltaTable.forPath(spark, str(table)).vacuum(0)
            assert len(data_files(str(table))) == 1  # the compacted file alone
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    results = {}
    for engine, table in zip(("pandas", "spark"), tables, strict=True):
        spec = load_spec(job).with_overrides(output=str(table), checkpoint=str(tmp_path / "ck"))
        res = run_quality(spec, engine=engine)
        assert "past the table's file retention (interval 1 seconds)" in res.note, res.note
        assert "validated the whole table" in res.note
        results[engine] = verdicts(res)
    assert results["pandas"] == results["spark"]
    ((suite, versions, mode, count),) = results["pandas"][2]
    assert (mode, count) == (PAST_RETENTION, 10 + len(rows)) and versions.startswith("0..")
    assert {c: s for c, s, _, _ in results["pandas"][3] if s != "pass"}.items() >= expected.items()

    for table in tables:  # a retention long enough again: the next run reads only what is new
        set_retention(table, "interval 1 days")
        write(spark, job, table, [clean_row(job, 40 + i) for i in range(3)])
    for _, _, batches, _ in both(tmp_path, job):
        assert [(b[2], b[3]) for b in batches] == [("incremental", 3)]


def test_a_quarantine_made_anew_is_validated_whole_not_read_as_nothing_new(spark, tmp_path):
    """Someone cleared the quarantine with ``rm -rf``; the next batch with bad lines made it again,
    its versions numbered from 0. Both engines took "versions after the last validated one" of the
    old table for it: "nothing quarantined since version 0: quarantine rate 0", the new bad rows
    unchecked until the new table outgrew the old one's versions. Now the table's creation time
    (after the last run) says it is another table: it is validated whole, and the note says why."""
    job = "user_counts"
    table = tmp_path / "pandas" / job
    write(spark, job, table, [clean_row(job, i) for i in range(10)])
    quarantine(spark, table, 2)
    log_progress(tmp_path / "ck", read=200, watermark=minutes(60))
    shutil.copytree(table, tmp_path / "spark" / job)
    for _, _, batches, _ in both(tmp_path, job):
        assert [(b[1], b[2], b[3]) for b in batches[1:]] == [("0..0", "first run", 2)]

    for engine in ("pandas", "spark"):
        shutil.rmtree(tmp_path / engine / job / "_quarantine")
        quarantine(spark, tmp_path / engine / job, 3)
    runs = {}
    for engine in ("pandas", "spark"):
        spec = load_spec(job).with_overrides(
            output=str(tmp_path / engine / job), checkpoint=str(tmp_path / "ck")
        )
        res = run_quality(spec, engine=engine)
        assert f"{tmp_path / engine / job / '_quarantine'} was made anew at" in res.note, res.note
        runs[engine] = verdicts(res)
    assert runs["pandas"][2:] == runs["spark"][2:]
    ((suite, versions, mode, count),) = runs["pandas"][2]
    assert (suite.endswith("quarantine"), versions, mode, count) == (True, "0..0", "first run", 3)

    # `checkpoint restore` RESTOREs the tables: a restored table is the same table, not made anew
    # (RESTORE puts back an older version's metaData, which keeps the table's createdTime)
    from datetime import datetime

    from spark_jobs.quality.incremental import made_anew

    out = tmp_path / "pandas" / job
    validated = datetime.now()
    time.sleep(1.1)
    spark.sql(f"ALTER TABLE delta.`{out}` SET TBLPROPERTIES ('statekeeper.test' = '1')")
    spark.sql(f"RESTORE TABLE delta.`{out}` TO VERSION AS OF 0")
    assert made_anew(str(out), validated) is None
