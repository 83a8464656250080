"""What a ``checkpoint`` command works on: the checkpoint (held to the one rule of
:mod:`spark_jobs.contract.confine`, which ``run --checkpoint`` and the DAGs apply too), its
snapshot store (under ``<data>/snapshots`` or ``$STATEKEEPER_SNAPSHOT_ROOTS``) and the job.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from spark_jobs.contract import paths
from spark_jobs.contract.confine import checkpoint_path
from spark_jobs.contract.errors import UserError
from spark_jobs.contract.spec import JobSpec


@dataclass(frozen=True)
class Target:
    """What a command works on: a checkpoint, its snapshot store, and the job (when known)."""

    checkpoint: str
    snapshot_root: str
    job: str
    spec: JobSpec | None = None  # when --job was given


def resolve(job: str | None, checkpoint: str | None, snapshot_root: str | None = None) -> Target:
    """The command's target from ``--job`` or ``--checkpoint`` (and ``--snapshot-root``)."""
    spec = None
    if job:
        from spark_jobs.contract.spec import load_spec

        # With both, the folder is the job's checkpoint elsewhere (a replay, a backfill):
        # checked against the job's spec all the same.
        spec = load_spec(job).with_overrides(checkpoint=checkpoint)
        checkpoint = spec.checkpoint
        from spark_jobs.contract.binding import adopt_inputs, adopt_repartition

        # the partitions and inputs it runs at, as its last run (a backfill's --input) recorded
        spec = adopt_inputs(adopt_repartition(spec))
    elif not checkpoint:
        raise UserError("say which checkpoint: --job JOB or --checkpoint URI")
    assert checkpoint is not None
    name = job or Path(paths.given(checkpoint).rstrip("/")).name
    ck = checkpoint_path(checkpoint)
    snap = paths.confine(
        snapshot_root or paths.default_snapshot_root(name), "snapshots", "snapshot root"
    )
    if snap.startswith(ck.rstrip("/") + "/") or ck.startswith(snap.rstrip("/") + "/"):
        raise UserError(f"snapshot root {snap} and checkpoint {ck} must not contain each other")
    return Target(checkpoint=ck, snapshot_root=snap, job=name, spec=spec)
