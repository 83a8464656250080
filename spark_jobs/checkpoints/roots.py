"""Where the checkpoint commands may act: the configured checkpoint and snapshot roots.

Roots are ``<data>/checkpoints``, ``<data>/backfill``, the folders holding the job specs'
checkpoints, ``<data>/snapshots`` (the default snapshot root is ``<data>/snapshots/<job>``), and
the folders listed in
``$STATEKEEPER_CHECKPOINT_ROOTS`` / ``$STATEKEEPER_SNAPSHOT_ROOTS`` (``:``-separated). A path
that resolves outside them (``..``, a symlink, a typo'd absolute path) is refused before anything
is read or written. Inside a root, a Delta table, a job's output or Airflow's home is still no
checkpoint.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from spark_jobs.contract import delta, paths
from spark_jobs.contract.errors import UserError

CHECKPOINT_ROOTS_ENV = "STATEKEEPER_CHECKPOINT_ROOTS"
SNAPSHOT_ROOTS_ENV = "STATEKEEPER_SNAPSHOT_ROOTS"


@dataclass(frozen=True)
class Target:
    """What a command works on: a checkpoint, its snapshot store, and the job (when known)."""

    checkpoint: str
    snapshot_root: str
    job: str
    spec: object | None = None  # JobSpec, when --job was given


def _env_roots(name: str) -> list[str]:
    return [r for r in os.environ.get(name, "").split(os.pathsep) if r.strip()]


def checkpoint_roots() -> list[str]:
    """``<data>/checkpoints``, ``<data>/backfill`` (a backfill's own checkpoint), the folders
    holding the specs' checkpoints and the env's. Never the data folder itself: it also holds
    the tables, the landing folders and Airflow's home."""
    data = paths.data_dir()
    roots = [str(data / "checkpoints"), str(data / "backfill")] + _env_roots(CHECKPOINT_ROOTS_ENV)
    try:
        from spark_jobs.contract.spec import load_all

        specs = load_all()
    except UserError:
        specs = []  # a broken spec elsewhere must not block maintenance of this checkpoint
    for s in specs:
        parent = (
            str(Path(s.checkpoint).parent)
            if "://" not in s.checkpoint
            else s.checkpoint.rsplit("/", 1)[0]
        )
        if "://" in parent or not Path(data).resolve().is_relative_to(Path(parent).resolve()):
            roots.append(parent)  # a spec's folder, unless it is the data folder or above it
    return list(dict.fromkeys(roots))


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


def snapshot_roots() -> list[str]:
    return list(
        dict.fromkeys([str(paths.data_dir() / "snapshots")] + _env_roots(SNAPSHOT_ROOTS_ENV))
    )


def default_snapshot_root(job: str) -> str:
    return str(paths.data_dir() / "snapshots" / job)


def normalise(uri: str) -> str:
    """:func:`spark_jobs.contract.paths.normalise`, a URL climbing above its bucket as a user
    error."""
    try:
        return paths.normalise(uri)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def confine(uri: str, roots: list[str], what: str, env: str) -> str:
    """``uri`` normalised, if strictly inside one of ``roots``; else a one-line refusal."""
    norm = normalise(uri)
    for root in roots:
        r = normalise(root).rstrip("/")
        if norm.startswith(r + "/"):
            return norm
    shown = ", ".join(roots) or "none"
    raise UserError(
        f"{what} {uri} is outside the configured roots ({shown}); use a path under one of them "
        f"or add its folder to ${env}"
    )


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
    ck = confine(checkpoint, checkpoint_roots(), "checkpoint", CHECKPOINT_ROOTS_ENV)
    check_is_checkpoint(ck)
    snap = confine(
        snapshot_root or default_snapshot_root(name),
        snapshot_roots(),
        "snapshot root",
        SNAPSHOT_ROOTS_ENV,
    )
    if snap.startswith(ck.rstrip("/") + "/") or ck.startswith(snap.rstrip("/") + "/"):
        raise UserError(f"snapshot root {snap} and checkpoint {ck} must not contain each other")
    return Target(checkpoint=ck, snapshot_root=snap, job=name, spec=spec)
