"""``checkpoint repartition JOB --partitions N``: rescale a stopped job's state to N partitions.

Spark pins ``spark.sql.shuffle.partitions`` in the offset log at a query's first batch, so a
stateful job keeps its partition count forever. Spark 4.2's (experimental, classic-session)
``StreamingCheckpointManager.repartition`` rewrites the state into N partitions and records it as
one extra micro-batch that reads no input. Around it, this module makes it an operation:

1. under the job's lock: the checkpoint must validate, be stopped, have committed batches and
   hold only operators Spark can repartition (:data:`SUPPORTED`; anything else is refused
   before a file is touched);
2. a snapshot of the checkpoint as it is (``checkpoint restore`` brings it back);
3. a copy of the checkpoint beside it (the undo), then Spark repartitions the checkpoint;
   state folders above N (a scale-down) are dropped, and the result must validate;
4. the checkpoint's binding records the new partition count, so runs of the unchanged spec use
   it; the copy is deleted.

A failure at any step swaps the untouched copy back in atomically (as ``restore`` does): the
checkpoint is as it was. A process killed mid-way leaves the copy
(``.<name>.before-repartition-<time>``) and the snapshot; rerun the same command (Spark finishes
an abandoned repartition) or ``checkpoint restore``.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from spark_jobs.checkpoints import snapshots
from spark_jobs.checkpoints.layout import read_layout
from spark_jobs.checkpoints.restore import exchange, local_checkpoint
from spark_jobs.checkpoints.roots import Target
from spark_jobs.checkpoints.validate import PROVIDER_CONF, SHUFFLE_CONF, validate_checkpoint
from spark_jobs.contract import paths
from spark_jobs.contract.errors import UserError
from spark_jobs.runtime import binding
from spark_jobs.runtime.lock import JobLock

# Operator names (state/<op>/_metadata) whose repartition is proven to give the same tables as
# a job that never changed partitions (tests/integration/test_repartition.py): every operator the
# seven jobs use. Spark may accept others; an operator not proven here is refused.
SUPPORTED = {
    "applyInPandasWithState",  # sessions, fraud_alerts (batched executor), user_counts
    "transformWithStateInPandasExec",  # service_health (timers, initial state)
    "stateStoreSave",  # windowed_counts (window aggregation)
    "dedupeWithinWatermark",  # dedup_events
    "symmetricHashJoin",  # order_payments (stream-stream join, four stores per partition)
}
ROCKSDB = "RocksDBStateStoreProvider"


def plan(target: Target, partitions: int) -> dict[str, Any]:
    """What would happen, or a one-line refusal; reads files only (no Spark)."""
    if partitions < 1:
        raise UserError(f"--partitions must be at least 1, not {partitions}")
    ck = target.checkpoint
    lay = read_layout(ck)
    if not lay.exists or lay.last_committed is None:
        raise UserError(f"checkpoint {ck} has no committed batch yet; nothing to repartition")
    if lay.uncommitted:
        raise UserError(
            f"checkpoint {ck} has a started but uncommitted batch {lay.uncommitted[-1]}; run the "
            "job once (available-now) so it finishes, then repartition"
        )
    report = validate_checkpoint(ck, layout=lay)
    if report.errors:
        f = report.errors[0]
        raise UserError(f"checkpoint {ck} does not validate ([{f.code}] {f.message}); {f.fix}")
    provider = lay.pinned_conf().get(PROVIDER_CONF, "")
    if provider and not provider.endswith(ROCKSDB):
        raise UserError(
            f"job {target.job} cannot be repartitioned: its state store is {provider.rsplit('.', 1)[-1]} "
            "and Spark repartitions RocksDB state only; run it on a new checkpoint instead"
        )
    names = {
        op: str((meta.get("operatorInfo") or {}).get("operatorName"))
        for op, meta in lay.operators.items()
    }
    if not names:
        raise UserError(f"checkpoint {ck} holds no state; a stateless query needs no repartition")
    for op, name in sorted(names.items()):
        if name not in SUPPORTED:
            raise UserError(
                f"job {target.job} cannot be repartitioned: operator {op} is {name}, whose "
                "repartition is not proven here; run it on a new checkpoint with the new "
                "shuffle_partitions instead"
            )
    current = int(lay.pinned_conf().get(SHUFFLE_CONF, 0))
    if current == partitions:
        raise UserError(f"checkpoint {ck} already has {partitions} partitions; nothing to do")
    return {
        "checkpoint": ck,
        "job": target.job,
        "from": current,
        "to": partitions,
        "last_committed_batch": lay.last_committed,
        "operators": [names[op] for op in sorted(names)],
    }


def repartition(target: Target, partitions: int, spark: Any = None) -> dict[str, Any]:
    """Rescale ``target``'s state to ``partitions``; see the module docstring for the steps."""
    ck = local_checkpoint(target, "repartition")
    started = time.perf_counter()
    with JobLock(str(ck), job=target.job, purpose="repartition"):
        result = plan(target, partitions)
        snap = snapshots.take_snapshot(target, locked=True)
        result["snapshot"] = snap["id"]
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        backup = ck.with_name(f".{ck.name}.before-repartition-{stamp}")
        _copy(ck, backup)
        try:
            _spark_repartition(target, ck, partitions, spark)
            _drop_partitions_above(ck, partitions)
            report = validate_checkpoint(str(ck))
            if report.errors:
                f = report.errors[0]
                raise UserError(
                    f"the repartitioned checkpoint does not validate ([{f.code}] {f.message}); "
                    f"put back as it was"
                )
            _record(ck, result)
        except BaseException:
            _put_back(target, ck, backup)
            raise
        finally:
            shutil.rmtree(backup, ignore_errors=True)
    result["last_committed_batch"] = read_layout(str(ck)).last_committed
    result["seconds"] = round(time.perf_counter() - started, 2)
    return result


def _put_back(target: Target, ck: Path, backup: Path) -> None:
    """Swap the untouched copy back in, atomically, holding its lock so no run starts between."""
    lock = JobLock(str(backup), job=target.job, purpose="repartition").acquire()
    try:
        if not exchange(backup, ck):
            failed = ck.with_name(f"{backup.name}.failed")
            ck.rename(failed)
            backup.rename(ck)
            backup = failed
    finally:
        lock.release()
    shutil.rmtree(backup, ignore_errors=True)  # now the failed attempt


def _copy(ck: Path, dest: Path) -> None:
    """The checkpoint in place is repartitioned (Spark writes absolute schema paths into a
    transformWithState checkpoint's metadata, so a copy elsewhere would point at the wrong
    folder); this copy is the undo. The lock file stays the live checkpoint's."""
    lock_rel = Path(paths.STATEKEEPER_DIR) / paths.LOCK_FILE

    def ignore(folder: str, names: list[str]) -> list[str]:
        return [n for n in names if Path(folder, n).relative_to(ck) == lock_rel]

    shutil.copytree(ck, dest, ignore=ignore, copy_function=shutil.copy2)


def _spark_repartition(target: Target, ck: Path, partitions: int, spark: Any) -> None:
    from spark_jobs.runtime import spark_errors
    from spark_jobs.runtime.session import build_session, spec_confs

    # The spec's state store confs (changelog checkpointing is not pinned in the offset log).
    spec: Any = target.spec
    confs = spec_confs(replace(spec, shuffle_partitions=partitions)) if spec is not None else {}
    spark = spark or build_session(f"statekeeper-repartition-{target.job}", conf=confs)
    for k, v in confs.items():
        spark.conf.set(k, v)
    # The state stores report to the StateStoreCoordinator, which only exists once the session's
    # StreamingQueryManager does: a fresh session (the CLI's) must create it first.
    spark.streams.active  # noqa: B018
    try:
        spark._streamingCheckpointManager.repartition(str(ck), partitions)
    except spark_errors.SPARK_ERRORS as exc:  # one line (the caller puts the copy back)
        raise UserError(
            f"Spark could not repartition {target.checkpoint}: {spark_errors.reason(exc)}; "
            "checkpoint unchanged"
        ) from exc


def _drop_partitions_above(ck: Path, partitions: int) -> None:
    """After a scale-down Spark leaves partitions N.. as they were; nothing reads them again
    (the snapshot keeps them), and left in place they would fail validation."""
    for op in (ck / "state").iterdir():
        for part in op.iterdir():
            if part.name.isdigit() and int(part.name) >= partitions:
                shutil.rmtree(part)


def _record(ck: Path, result: dict[str, Any]) -> None:
    binding.record_repartition(
        str(ck),
        {
            "from": result["from"],
            "to": result["to"],
            "batch": read_layout(str(ck)).last_committed,
            "snapshot": result["snapshot"],
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
    )
