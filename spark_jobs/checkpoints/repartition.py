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
checkpoint is as it was. A process killed mid-way cannot do that: from the moment the copy is
whole until the binding records the new count, ``_statekeeper/pending.json`` in the checkpoint
names the copy, and runs refuse it (exit 4, "run the same checkpoint repartition again"). The
same command run again swaps that copy back (the checkpoint is as it was before the killed
attempt, binding included), says so, and repartitions afresh; copies no marker names (a kill
while copying, or while deleting the copy after the binding was recorded) are deleted.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from spark_jobs.checkpoints import queries, snapshots
from spark_jobs.checkpoints.layout import read_layout
from spark_jobs.checkpoints.restore import exchange, local_checkpoint
from spark_jobs.checkpoints.roots import Target
from spark_jobs.checkpoints.validate import PROVIDER_CONF, SHUFFLE_CONF, validate_checkpoint
from spark_jobs.contract import binding, paths
from spark_jobs.contract.errors import UserError
from spark_jobs.contract.lock import JobLock
from spark_jobs.contract.spec import SPARK_INT_MAX

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
    if partitions > SPARK_INT_MAX:
        raise UserError(
            f"--partitions must be at most {SPARK_INT_MAX} (Spark's limit), not {partitions}"
        )
    ck = target.checkpoint
    undo = cut_short_copy(target)  # the repartition first puts it back: plan on it
    lay = read_layout(str(undo) if undo else ck)
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
        "undo_first": str(undo) if undo else None,
    }


def cut_short_copy(target: Target) -> Path | None:
    """The copy a killed repartition of ``target`` left to be put back, or None."""
    local = paths.local_path(target.checkpoint)
    if local is None:
        return None
    pending = queries.read_pending(local)
    if pending is None or pending.get("command") != "repartition":
        return None
    name = str(pending.get("undo", ""))  # a name beside the checkpoint, never a path elsewhere
    backup = local.with_name(name) if name.startswith(_copy_prefix(local)) else None
    return backup if backup is not None and "/" not in name and backup.is_dir() else None


def repartition(target: Target, partitions: int, spark: Any = None) -> dict[str, Any]:
    """Rescale ``target``'s state to ``partitions``; see the module docstring for the steps."""
    ck = local_checkpoint(target, "repartition")
    started = time.perf_counter()
    # Its own hold of the lock: putting the copy back swaps the folder the lock file is in.
    with JobLock(str(ck), job=target.job, purpose="repartition"):
        undone = undo_cut_short(target, ck)
    with JobLock(str(ck), job=target.job, purpose="repartition"):
        result = plan(target, partitions)
        snap = snapshots.take_snapshot(target, locked=True)
        result["snapshot"] = snap["id"]
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        backup = ck.with_name(f"{_copy_prefix(ck)}{stamp}")
        _copy(ck, backup)
        # From here until the binding says N, a killed process leaves a half-done checkpoint:
        # runs refuse it, and the same command puts this copy back (undo_cut_short).
        queries.mark_pending(
            ck, "repartition", to=partitions, undo=backup.name, snapshot=snap["id"]
        )
        try:
            _spark_repartition(target, ck, partitions, spark)
            _drop_partitions_above(ck, partitions)
            _test_pause("after-spark")
            report = validate_checkpoint(str(ck))
            if report.errors:
                f = report.errors[0]
                raise UserError(
                    f"the repartitioned checkpoint does not validate ([{f.code}] {f.message}); "
                    f"put back as it was"
                )
            _record(ck, result)
            queries.clear_pending(ck)
        except BaseException:
            _put_back(target, ck, backup)  # the copy holds no marker: runs may go on
            raise
        finally:
            shutil.rmtree(backup, ignore_errors=True)
    if undone:
        result["undone"] = undone
    result["last_committed_batch"] = read_layout(str(ck)).last_committed
    result["seconds"] = round(time.perf_counter() - started, 2)
    return result


def _copy_prefix(ck: Path) -> str:
    return f".{ck.name}.before-repartition-"


def undo_cut_short(target: Target, ck: Path) -> str | None:
    """Undo a repartition whose process died (the caller holds the job's lock): swap back the
    copy its marker names, so the checkpoint, binding included, is as it was before it. Then
    delete every other copy beside the checkpoint: no marker names it, so it is the copy of a
    repartition that finished (killed while deleting it) or never touched the checkpoint (killed
    while copying). Returns the copy put back, or None."""
    pending = queries.read_pending(ck)
    undone = None
    if pending is not None and pending.get("command") == "repartition":
        backup = cut_short_copy(target)
        if backup is None:
            raise UserError(
                f"checkpoint {ck}: a repartition was cut short and its copy "
                f"{pending.get('undo')} is gone; "
                f"checkpoint restore --snapshot {pending.get('snapshot')} brings back the "
                "checkpoint as it was before it"
            )
        _put_back(target, ck, backup)
        undone = str(backup)
        print(
            f"statekeeper: a repartition of {ck} was cut short; put the checkpoint back as it "
            f"was before it (from {backup.name}); repartitioning again",
            file=sys.stderr,
            flush=True,
        )
    for stale in ck.parent.glob(f"{_copy_prefix(ck)}*"):
        shutil.rmtree(stale, ignore_errors=True)
    return undone


# Test-only: the named step sleeps (a test kills the process there). Never set in production.
PAUSE_ENV = "STATEKEEPER_TEST_PAUSE_REPARTITION_AT"


def _test_pause(step: str) -> None:
    if os.environ.get(PAUSE_ENV) == step:
        print(f"statekeeper-test: repartition paused at {step}", file=sys.stderr, flush=True)
        time.sleep(600)


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
    from spark_jobs.contract.spark_confs import spec_confs
    from spark_jobs.runtime import spark_errors
    from spark_jobs.runtime.session import build_session

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
