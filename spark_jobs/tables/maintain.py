"""``table maintain``: for a job's output and quarantine tables, in this order: the declared
table settings (:data:`spark_jobs.io.tables.TABLE_PROPERTIES`), compaction, then a VACUUM that
keeps every file a kept snapshot's restore needs (:mod:`plan`).

Safe beside the job's running query: nothing here takes the job's lock; the compaction and the
property change are commits the stream's writes retry against (and the reverse). Refused while a
restore, rollback or repartition holds the lock or was cut short: those put tables back.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from spark_jobs import eventlog
from spark_jobs.checkpoints import manifests, queries
from spark_jobs.contract import delta, paths
from spark_jobs.contract import maintenance as record
from spark_jobs.contract import table_settings as tables
from spark_jobs.contract.errors import UserError
from spark_jobs.contract.spec import JobSpec
from spark_jobs.io import conflicts
from spark_jobs.tables import plan
from spark_jobs.tables import report as report_text
from spark_jobs.tables.compact import compact
from spark_jobs.tables.vacuum import data_files, vacuum

# Lock holders beside which maintenance is fine: a run writes new files only, a snapshot copies
# the checkpoint. The others put tables back to earlier versions.
COMPATIBLE_HOLDERS = ("run", "snapshot")
# Delta's default target size: OPTIMIZE rewrites files smaller than this, in bins of this size.
MIN_FILE_SIZE_CONF = "spark.databricks.delta.optimize.minFileSize"


@dataclass(frozen=True)
class Job:
    """What maintenance works on: the job's spec, its checkpoint and snapshot store, and the
    tables the checkpoint writes (the quarantine by default beside the output)."""

    spec: JobSpec
    checkpoint: str
    snapshot_root: str
    output: str
    quarantine: str = ""

    @property
    def quarantine_table(self) -> str:
        return self.quarantine or paths.quarantine_table(self.output)


def check_not_busy(checkpoint: str) -> None:
    """Refuse while a restore/rollback/repartition holds the checkpoint or was cut short."""
    from spark_jobs.contract.lock import describe, holder

    queries.check_pending(checkpoint)
    try:
        who = holder(checkpoint)
    except UserError:
        return  # a checkpoint URL has no lock to look at
    if who is not None and who.get("purpose", "run") not in COMPATIBLE_HOLDERS:
        raise UserError(
            f"checkpoint {checkpoint} is held by a {describe(who)}; it may be putting the "
            "tables back: run table maintain after it finishes"
        )


def _properties(spark: Any, table: str) -> dict[str, str]:
    row = spark.sql(f"DESCRIBE DETAIL delta.`{table}`").first()
    return dict(row["properties"] or {})


def _apply_settings(spark: Any, table: str, to_set: dict[str, str], to_unset: list[str]) -> None:
    def alter() -> None:
        if to_set:
            pairs = ", ".join(f"'{k}' = '{v}'" for k, v in to_set.items())
            spark.sql(f"ALTER TABLE delta.`{table}` SET TBLPROPERTIES ({pairs})")
        if to_unset:
            keys = ", ".join(f"'{k}'" for k in to_unset)
            spark.sql(f"ALTER TABLE delta.`{table}` UNSET TBLPROPERTIES IF EXISTS ({keys})")

    conflicts.retrying(alter)


def _would_compact(table: str, min_size: int) -> int:
    """Live files OPTIMIZE would rewrite: those under its minimum size, when there are two."""
    from deltalake import DeltaTable

    adds = DeltaTable(table).get_add_actions(flatten=True)
    small = (
        [s for s in adds.column("size_bytes").to_pylist() if s < min_size] if adds.num_rows else []
    )
    return len(small) if len(small) > 1 else 0


def _stats(table: str) -> dict[str, Any]:
    live = delta.live_files(table)
    on_disk = data_files(table)
    return {
        **(live.to_dict() if live else {"files": 0, "bytes": 0, "average_bytes": 0}),
        "files_on_disk": len(on_disk),
        "bytes_on_disk": sum(on_disk.values()),
    }


def maintain_table(
    spark: Any, job: Job, table: str, role: str, zorder_by: tuple[str, ...], dry_run: bool
) -> dict[str, Any]:
    """One table: settings, compaction, vacuum; its part of the report."""
    out: dict[str, Any] = {"table": table, "role": role, "warnings": []}
    if spark is None or not delta.exists(table):  # no session: neither table was there
        out["skipped"] = "no table yet (the job has not written it)"
        return out
    out["before"] = _stats(table)
    started = time.perf_counter()
    props = _properties(spark, table)
    snaps = manifests.list_snapshots(job.snapshot_root)
    need = plan.retention(
        job.spec.tables.retention,
        snaps,
        tables.interval_seconds(props.get(tables.RETENTION_PROPERTY)),
        job.spec.snapshots.recovery_window,
    )
    out["retention"] = need.to_dict()
    # the retention becomes the table's own: Delta's time travel (restore) is allowed that far
    to_set, to_unset = plan.settings_changes(props, need.seconds)
    if not dry_run and (to_set or to_unset):
        _apply_settings(spark, table, to_set, to_unset)
        props = _properties(spark, table)
    out["settings"] = {
        "set": to_set,
        "unset": to_unset,
        "dry_run": dry_run,
        "seconds": round(time.perf_counter() - started, 3),
    }
    warning = plan.log_retention_warning(props, need)
    if warning:
        out["warnings"].append(warning)
    if dry_run:
        min_size = int(spark.conf.get(MIN_FILE_SIZE_CONF, str(1 << 30)))
        out["compaction"] = {
            "would_rewrite_files": _would_compact(table, min_size),
            "dry_run": True,
        }
    else:
        out["compaction"] = compact(spark, table, zorder_by).to_dict()
    out["vacuum"] = vacuum(spark, table, need.hours, dry_run=dry_run).to_dict()
    out["after"] = _stats(table)
    return out


def maintain(job: Job, dry_run: bool = False, spark: Any = None) -> dict[str, Any]:
    """Maintain the job's output and quarantine tables; the report (one JSON-able object)."""
    check_not_busy(job.checkpoint)
    from spark_jobs.jobs import definition

    zorder_by = tuple(definition(job.spec.name).cluster_by)
    started = time.perf_counter()
    # A job that has not run yet has nothing to maintain: no Spark started (7 s per job in the
    # maintenance DAG's run).
    own = spark is None and any(delta.exists(t) for t in (job.output, job.quarantine_table))
    if own:
        from spark_jobs.runtime.session import build_session

        # The job's spec sizes the tasks: with Spark's defaults a VACUUM lists the table's files
        # in 10,000 tasks (parallelPartitionDiscovery) and joins them in 200 (shuffle
        # partitions): 40-95 s against 3 s for a table of 14 files on two cores.
        tasks = str(job.spec.shuffle_partitions)
        listing = {"spark.sql.sources.parallelPartitionDiscovery.parallelism": tasks}
        name = f"statekeeper-table-maintain-{job.spec.name}"
        spark = build_session(name, spec=job.spec, conf=listing)
    try:
        reports = [
            maintain_table(spark, job, job.output, "output", zorder_by, dry_run),
            maintain_table(spark, job, job.quarantine_table, "quarantine", (), dry_run),
        ]
    finally:
        if own:
            spark.stop()
    seconds = round(time.perf_counter() - started, 3)
    report = {
        "job": job.spec.name,
        "checkpoint": job.checkpoint,
        "snapshot_root": job.snapshot_root,
        "dry_run": dry_run,
        "seconds": seconds,
        "tables": reports,
    }
    if not dry_run:
        finished = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        record.write(job.checkpoint, finished, seconds, report)
        # the event log's row (``events JOB --kind maintenance``): a dry run changed nothing
        eventlog.operation(
            "maintenance", job, report_text.event_details(report), report_text.verdict(report)
        )
    return report
