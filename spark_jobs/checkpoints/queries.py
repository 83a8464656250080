"""Putting a job's streaming queries back to an earlier batch without losing or repeating a row.

A job's one streaming query writes its output and quarantine tables, each exactly once per
(query id, batch id); checkpoints of earlier releases may also hold ``_statekeeper/quarantine``,
a quarantine query of its own. Bringing
a query back to batch N (restore, rollback) and re-running it is safe only if the table forgets
batches after N as well, and the query gets a new id: Delta skips a (query id, batch id) it has
committed, and a re-planned batch rarely holds what the original held, so with the old id those
rows are lost; with a new id but the old table they are written twice. So, per query:

1. the table goes back to the version just before the first commit of a batch after N
   (``delta_txn.version_before_batch``; refused when something else wrote after it);
2. the checkpoint gets a new query id, and re-runs every batch after N into the table once.

The table is restored first: a step cut short after it is found done when the command is re-run.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from spark_jobs.checkpoints import delta_txn
from spark_jobs.checkpoints.layout import read_layout
from spark_jobs.contract import paths
from spark_jobs.contract.errors import ExitCode, UserError

# Each query's checkpoint, relative to the job's: the job's own query and the quarantine query.
MAIN = ""
QUARANTINE = f"{paths.STATEKEEPER_DIR}/{paths.QUARANTINE_CHECKPOINT}"


def job_tables(output: str) -> dict[str, list[str]]:
    """The tables each query checkpoint writes, given the job's output table (its quarantine
    beside it, as a run derives it)."""
    return _tables(output, paths.quarantine_table(output))


def _tables(output: str, quarantine: str) -> dict[str, list[str]]:
    """The job's one query writes its output and its quarantine under its query id
    (``spark_jobs.io.sinks``); a quarantine query's own checkpoint is left by releases before
    that, and wrote the quarantine."""
    return {MAIN: [output, quarantine], QUARANTINE: [quarantine]}


@dataclass
class QueryReset:
    """What happens to one query: its table goes back to ``table_version`` (None: nothing to
    undo) and its checkpoint, at batch ``batch``, gets ``new_query_id``."""

    checkpoint: str  # relative to the job's checkpoint ("" for the job's own query)
    table: str
    query_id: str
    batch: int
    table_version: int | None
    new_query_id: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def plan_resets(
    ck: Path, tables: dict[str, list[str]], batches: dict[str, int] | None = None
) -> list[QueryReset]:
    """One reset per table of each query checkpoint present under ``ck`` (a checkpoint folder as
    it will be run: restored or rolled back); a query's tables share its one new id. ``batches``
    overrides the batch a query goes back to (default: its last committed one)."""
    out = []
    for rel, written in tables.items():
        qck = ck / rel if rel else ck
        if not (qck / "metadata").is_file():
            continue
        lay = read_layout(str(qck), sizes=False)
        batch = (batches or {}).get(rel, lay.last_committed)
        if lay.query_id is None or batch is None:
            continue  # never committed a batch: nothing of it is in the table
        new_id = str(uuid.uuid4())
        for table in written:
            version, _log = delta_txn.version_before_batch(table, lay.query_id, batch)
            out.append(QueryReset(rel, table, lay.query_id, batch, version, new_id))
    return out


def restore_tables(resets: list[QueryReset], spark: Any = None) -> None:
    """Delta RESTORE of every table that has batches to forget (time travel keeps them)."""
    todo = [(r.table, r.table_version) for r in resets if r.table_version is not None]
    if not todo:
        return
    own = spark is None
    if own:
        from spark_jobs.runtime.session import build_session

        spark = build_session("statekeeper-checkpoint-restore")
    try:
        from delta.tables import DeltaTable

        for table, version in todo:
            DeltaTable.forPath(spark, table).restoreToVersion(version)
    finally:
        if own:
            spark.stop()


def set_query_ids(ck: Path, resets: list[QueryReset], aside: Path | None = None) -> None:
    """Write each query's new id into its ``metadata`` (the old one moved under ``aside``)."""
    for r in {r.checkpoint: r for r in resets}.values():  # one id per query, however many tables
        qck = ck / r.checkpoint if r.checkpoint else ck
        if aside is not None:
            keep = aside / r.checkpoint if r.checkpoint else aside
            keep.mkdir(parents=True, exist_ok=True)
            (qck / "metadata").rename(keep / "metadata")
        # Hadoop's local file system checks a file against its .crc: a rewritten one loses it.
        crc = qck / ".metadata.crc"
        if crc.exists():
            if aside is not None:
                crc.rename((aside / r.checkpoint if r.checkpoint else aside) / crc.name)
            else:
                crc.unlink()
        tmp = qck / ".metadata.statekeeper.tmp"
        tmp.write_text(json.dumps({"id": r.new_query_id}) + "\n")
        tmp.rename(qck / "metadata")


def _pending(ck: Path) -> Path:
    return ck / paths.STATEKEEPER_DIR / paths.PENDING_FILE


def mark_pending(ck: Path, command: str, **detail: Any) -> None:
    """Say in ``ck`` that its tables are being put back (or, for a repartition, its state
    rewritten): until ``command`` finishes (and moves or clears this), a run on ``ck`` would skip
    or repeat rows, so runs refuse. ``detail`` is what that command needs to finish or undo."""
    p = _pending(ck)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp")  # whole or absent: a cut-short write must not hide it
    tmp.write_text(json.dumps({"command": command, **detail}) + "\n")
    tmp.rename(p)


def read_pending(ck: Path) -> dict[str, Any] | None:
    """The marker :func:`mark_pending` left in ``ck``, or None."""
    try:
        found = json.loads(_pending(ck).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {"command": "restore"}  # unreadable: refuse as the oldest writer of it did
    return found if isinstance(found, dict) else {"command": "restore"}


def clear_pending(ck: Path) -> None:
    _pending(ck).unlink(missing_ok=True)


def check_pending(checkpoint: str) -> None:
    """Refuse (exit 4) to run on a checkpoint whose restore or rollback was cut short."""
    local = paths.local_path(checkpoint)
    pending = read_pending(local) if local is not None else None
    if pending is None:
        return
    command = str(pending.get("command", "restore"))
    if command == "repartition":
        raise UserError(
            f"checkpoint {checkpoint}: a checkpoint repartition to {pending.get('to')} partitions "
            "was cut short, its state may be half rewritten; run the same checkpoint repartition "
            "again (it puts the checkpoint back as it was before, then repartitions it)",
            exit_code=ExitCode.UNSAFE,
        )
    raise UserError(
        f"checkpoint {checkpoint}: a checkpoint {command} was cut short after putting the output "
        f"tables back; run the same checkpoint {command} again to finish it",
        exit_code=ExitCode.UNSAFE,
    )


def tables_for(
    target: Any, output: str | None, command: str, checkpoints: list[Path] | None = None
) -> tuple[dict[str, list[str]], str]:
    """The tables of a target's queries and where they come from: the binding of the first of
    ``checkpoints`` (default: the target's) that records them, the tables the checkpoint really
    wrote. Only a binding without tables (an older release's) falls back to ``--output`` or
    the job's spec, and the second value says so; with neither, refused."""
    from spark_jobs.contract.binding import bound_tables, same_table

    for ck in checkpoints or [Path(target.checkpoint)]:
        bound = bound_tables(str(ck)) if ck.exists() else None
        if bound is None:
            continue
        if output and not same_table(output, bound["output"]):
            raise UserError(
                f"{command}: checkpoint {target.checkpoint} writes table {bound['output']} (its "
                f"binding), not --output {output}; leave --output out (the binding names the "
                "tables) or pass --keep-tables to leave the tables alone"
            )
        return _tables(bound["output"], bound["quarantine"]), "binding"
    out = output or getattr(target.spec, "output", None)
    if not out:
        raise UserError(
            f"{command} puts the output tables back with the checkpoint, and checkpoint "
            f"{target.checkpoint} records none: name the job (--job JOB) or its table "
            "(--output URI), or pass --keep-tables to leave the tables alone (see "
            "docs/checkpoints.md)"
        )
    where = "--output" if output else "the job's spec"
    note = (
        f"checkpoint {target.checkpoint} records no tables (bound by an older release): "
        f"putting back {out} from {where}"
    )
    return job_tables(out), note
