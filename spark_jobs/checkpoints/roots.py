"""Where a checkpoint may be, for every command: ``run --checkpoint`` and each ``checkpoint``
command apply the same rule, from the one resolver and the one list of roots
(:mod:`spark_jobs.contract.paths`).

A path is resolved as a spec path is (``paths.resolve``: ``.data/...`` under ``$STATEKEEPER_DATA``,
another relative path under the project root), then must lie strictly inside a checkpoint root:
``<data>/checkpoints``, ``<data>/backfill`` (a backfill's own checkpoint), the folders listed in
``$STATEKEEPER_CHECKPOINT_ROOTS``, and the folders holding the job specs' own checkpoints. Snapshot
stores: ``<data>/snapshots`` and ``$STATEKEEPER_SNAPSHOT_ROOTS``. A path outside (``..``, a
symlink, a typo'd absolute path) is refused with the same line whichever command was given it,
before anything is read or written. Inside a root, a Delta table, a job's output or Airflow's home
is still no checkpoint.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from spark_jobs.contract import delta, paths
from spark_jobs.contract.errors import UserError
from spark_jobs.contract.spec import JobSpec


@dataclass(frozen=True)
class Target:
    """What a command works on: a checkpoint, its snapshot store, and the job (when known)."""

    checkpoint: str
    snapshot_root: str
    job: str
    spec: JobSpec | None = None  # when --job was given


def spec_checkpoint_folders() -> tuple[str, ...]:
    """The folders holding the specs' checkpoints (a spec may keep its checkpoint anywhere),
    never the data folder or one above it: that also holds the tables, the landing folders and
    Airflow's home."""
    try:
        from spark_jobs.contract.spec import load_all

        specs = load_all()
    except UserError:
        specs = []  # a broken spec elsewhere must not block maintenance of this checkpoint
    data = paths.data_dir().resolve()
    out = []
    for s in specs:
        parent = (
            s.checkpoint.rsplit("/", 1)[0]
            if "://" in s.checkpoint
            else str(Path(s.checkpoint).parent)
        )
        if "://" in parent or not data.is_relative_to(Path(parent).resolve()):
            out.append(parent)
    return tuple(dict.fromkeys(out))


def not_checkpoints() -> list[str]:
    """Folders that are never checkpoints even under a root: Airflow's home and the tables."""
    out = [str(paths.data_dir() / "airflow")]
    if os.environ.get("AIRFLOW_HOME"):
        out.append(os.environ["AIRFLOW_HOME"])
    try:
        from spark_jobs.contract.spec import load_all

        out += [s.output for s in load_all()]
    except UserError:
        pass  # the Delta table check below still stands
    return out


def check_is_checkpoint(ck: str) -> None:
    """Refuse a folder that is (or is inside) a Delta table, a job's output or Airflow's home."""
    for other in not_checkpoints():
        o = normalise(other).rstrip("/")
        if ck == o or ck.startswith(o + "/"):
            raise UserError(
                f"{ck} lies in {o}, which is not a checkpoint folder; name a checkpoint"
            )
    local = paths.local_path(ck)
    if local is None:
        return
    for folder in (local, *local.parents):
        if delta.exists(str(folder)):
            raise UserError(f"{ck} is inside the Delta table {folder}, not a checkpoint")


def normalise(uri: str) -> str:
    """:func:`spark_jobs.contract.paths.normalise` of the resolved path, a URL climbing above its
    bucket as a user error."""
    try:
        return paths.normalise(paths.resolve(uri))
    except ValueError as exc:
        raise UserError(str(exc)) from None


def confine(uri: str, kind: str, what: str, extra: tuple[str, ...] = ()) -> str:
    """``uri`` resolved and normalised, if strictly inside a root of ``kind`` (or ``extra``);
    else the one-line refusal naming the roots and the variable that adds one."""
    why = paths.outside_roots(uri, kind, extra=extra)
    if why:
        raise UserError(f"{what} {why}")
    return normalise(uri)


def checkpoint_path(uri: str) -> str:
    """The checkpoint ``uri`` names, resolved and normalised, as every command may use it: inside
    a checkpoint root and not a table; else a one-line refusal."""
    ck = confine(uri, "checkpoints", "checkpoint", spec_checkpoint_folders())
    check_is_checkpoint(ck)
    return ck


def resolve(job: str | None, checkpoint: str | None, snapshot_root: str | None = None) -> Target:
    """The command's target from ``--job`` or ``--checkpoint`` (and ``--snapshot-root``)."""
    spec = None
    if job:
        from spark_jobs.contract.spec import load_spec

        # With both, the folder is the job's checkpoint elsewhere (a replay, a backfill):
        # checked against the job's spec all the same.
        spec = load_spec(job).with_overrides(checkpoint=checkpoint)
        checkpoint = spec.checkpoint
        from spark_jobs.runtime.binding import adopt_repartition

        spec = adopt_repartition(spec)
    elif not checkpoint:
        raise UserError("say which checkpoint: --job JOB or --checkpoint URI")
    assert checkpoint is not None
    name = job or Path(normalise(checkpoint).rstrip("/")).name
    ck = checkpoint_path(checkpoint)
    snap = confine(snapshot_root or paths.default_snapshot_root(name), "snapshots", "snapshot root")
    if snap.startswith(ck.rstrip("/") + "/") or ck.startswith(snap.rstrip("/") + "/"):
        raise UserError(f"snapshot root {snap} and checkpoint {ck} must not contain each other")
    return Target(checkpoint=ck, snapshot_root=snap, job=name, spec=spec)
