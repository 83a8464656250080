"""DAG params that name paths are confined to the configured roots before anything runs.

A param typed into the Trigger form is run by the worker with the worker's rights, so ``input``,
``output``, ``checkpoint`` and ``tables_root`` may only name folders under the roots that
``spark_jobs.contract.paths.roots`` lists (``<data>/landing``, ``<data>/tables``,
``<data>/checkpoints``, plus ``$STATEKEEPER_LANDING_ROOTS`` / ``$STATEKEEPER_TABLE_ROOTS`` /
``$STATEKEEPER_CHECKPOINT_ROOTS``), by the very rule the commands apply to their options
(``spark_jobs.contract.confine.given_path``), so a path the guard lets through is one the command
accepts. Every
operator that uses them checks first, so a task run alone (cleared, retried) refuses too, and the
refusal fails the task without retries.

An ``input`` that is a ``kafka://`` URI is held to the job's own Kafka cluster instead
(``spark_jobs.contract.kafka.check_cluster``, through the spec's overrides, as ``run --input``
applies it): another topic there is fine, another cluster is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from airflow.sdk.exceptions import AirflowFailException

from spark_jobs.contract.errors import UserError
from spark_jobs.contract.kafka import is_kafka


class ParamOutsideRoots(AirflowFailException):
    """A path param names a folder outside its roots: refused, nothing submitted, no retry."""


def rendered(value: Any) -> str | None:
    """A templated value, or None when it rendered empty (``""``, or ``"None"`` from a param left
    unset): the one rule for "not given, use the spec's own"."""
    text = str(value if value is not None else "").strip()
    return None if text in ("", "None") else text


def check_path_params(context: Any, job: str | None = None) -> None:
    """Refuse (one line) when a path param of this run lies outside its roots, or its ``input``
    names a Kafka cluster that ``job``'s spec (else the ``job`` param's) does not."""
    from spark_jobs.contract.confine import PATH_OPTIONS, given_path  # not at DAG parse time

    params = (context or {}).get("params") or {}
    for name in PATH_OPTIONS:  # the commands' options' rule, param for param
        value = rendered(params.get(name))
        if value is None:
            continue  # empty: the spec's own path
        if name == "input" and is_kafka(value):
            # Without a job (a task that reads no input) there is nothing to hold it to; every
            # task that runs a job names it, and the job's own `run` applies the rule again.
            _check_kafka_input(value, job or rendered(params.get("job")))
            continue
        try:
            given_path(name, value, what=f"param {name}:")
        except UserError as exc:
            raise ParamOutsideRoots(f"{exc}; nothing was submitted") from None


def _check_kafka_input(uri: str, job: str | None) -> None:
    from spark_jobs.contract.spec import load_spec

    if job is None:
        return
    try:
        load_spec(job).with_overrides(input=uri)
    except UserError as exc:
        raise ParamOutsideRoots(f"param input: {exc}; nothing was submitted") from None


class ParamOutOfBounds(AirflowFailException):
    """A supervisor setting outside its bounds: refused before anything runs, no retry."""


@dataclass(frozen=True)
class Bound:
    """The allowed range of one supervisor setting, and why it has one."""

    minimum: float
    maximum: float
    why: str

    def schema(self) -> dict[str, Any]:
        """The Param schema keywords (the Trigger form refuses a value outside them)."""
        return {"minimum": self.minimum, "maximum": self.maximum}


# One place for the supervisor's bounds: the DAG's Param schemas and the operator's own check
# (for values that arrive otherwise: a spec's supervise: block, a DAG built by hand, a template)
# both read these.
SUPERVISE_BOUNDS: dict[str, Bound] = {
    "poll_seconds": Bound(1, 600, "below 1 s the shared triggerer busy-loops on the log"),
    "restart_backoff": Bound(1, 600, "a relaunch needs a pause; 600 s is the backoff's cap"),
    "max_restarts": Bound(0, 100, "past 100 restarts a crash loop is a bug, not bad luck"),
    "restart_window": Bound(60, 7 * 86400, "restarts are counted over 1 min to 7 days"),
    "watch_seconds": Bound(1, 86400, "one run watches at most a day; the next run takes over"),
}


def check_bound(name: str, value: float) -> float:
    """``value`` when it lies within ``SUPERVISE_BOUNDS[name]``; else one line, no retry."""
    b = SUPERVISE_BOUNDS[name]
    if not b.minimum <= value <= b.maximum:
        raise ParamOutOfBounds(
            f"{name}={value:g} is outside {b.minimum:g}..{b.maximum:g}: {b.why}; nothing was run"
        )
    return value
