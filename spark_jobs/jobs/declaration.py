"""A job's declaration: ``JOB = JobDef(...)`` in its module, the one place each fact is written.

The registry (:mod:`spark_jobs.jobs`) finds the declarations; the runner, the sinks, the batched
executor, publishing and the quality suites' schema, key and freshness checks read them. A job's
parameters are a :class:`JobParams` model: their types and defaults, checked against the spec's
``params`` before Spark starts. No Spark import here: the quality suites read declarations
without a JVM.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from spark_jobs.contract.durations import parse_seconds
from spark_jobs.contract.errors import UserError
from spark_jobs.contract.spec import MAX_FUTURE_LIMIT_SECONDS
from spark_jobs.io import tables

SINKS = ("append", "upsert")


def _seconds(value: Any) -> float:
    try:
        return parse_seconds(value)
    except UserError as exc:  # pydantic reports ValueErrors as the field's error
        raise ValueError(
            f"{value!r} is not a duration; write e.g. 30s, 10 minutes, 1 hour"
        ) from exc


# A duration as written in a spec (``30 minutes``), as seconds: above 0 (a zero window or gap
# fails in Spark or makes every event its own; a bare -3 in YAML parses as a number) and held to
# the bound the watermark has, so Spark is never handed an interval it cannot parse.
Duration = Annotated[float, BeforeValidator(_seconds), Field(gt=0, le=MAX_FUTURE_LIMIT_SECONDS)]


class JobParams(BaseModel):
    """A job's ``params``: subclass with one field per parameter, its type and its default (a
    field without a default is required). Unknown names are refused, so a typo is not ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @classmethod
    def of(cls, spec: Any) -> Self:
        """``spec.params`` checked and completed with the defaults; a one-line UserError naming
        the spec file and the parameter otherwise."""
        try:
            return cls.model_validate(spec.params)
        except ValidationError as exc:
            err = exc.errors()[0]
            name = ".".join(str(p) for p in err["loc"]) or "params"
            if err["type"] == "extra_forbidden":
                known = ", ".join(cls.model_fields) or "none"
                why = f"is not a parameter of job {spec.name} (its parameters: {known})"
            elif err["type"] == "missing":
                why = "is required"
            else:
                why = f"{err['msg'][0].lower()}{err['msg'][1:]} (got {err.get('input')!r})"
            raise UserError(f"job spec {spec.path or spec.name}: params.{name} {why}") from None


def grouped_by(columns: Mapping[str, str]) -> Callable[[Any], dict[str, dict[str, Any]]]:
    """``JobDef.shuffle_keys`` of a job whose operator groups each kind's events by one column."""

    def keys(spec: Any) -> dict[str, dict[str, Any]]:
        from pyspark.sql import functions as F

        return {kind: {c: F.col(c)} for kind, c in columns.items()}

    return keys


def watermarked(columns: Mapping[str, str]) -> Callable[[Any], Mapping[str, str]]:
    """``JobDef.watermarks`` of a job that always watermarks each kind's events on one column."""
    return lambda spec: dict(columns)


@dataclass(frozen=True)
class StateRule:
    """How a state row stored under an older declaration becomes this one's (upgrade migrate)."""

    from_schema: str  # Spark DDL of the old state row (what the checkpoint's schema holds)
    # old row -> new row; None drops the key. Rows are plain dicts of Python values, arrays as
    # lists: a top-level pure function, so it runs wherever the rewrite runs it.
    convert: Callable[[dict[str, Any]], dict[str, Any] | None]


@dataclass(frozen=True)
class JobDef:
    """Everything about one job but its spec (paths, watermark, trigger: ``include/jobs``)."""

    name: str
    inputs: tuple[str, ...]  # the input kinds it reads (spark_jobs.io.events)
    schema: str  # the output table's columns, as Spark DDL (docs/contracts.md §3)
    keys: tuple[str, ...]  # identify a row: unique in the table (quality checks, upserts)
    time_column: str  # the event-time column that says how fresh the table is
    # (spark, spec, {kind: typed event stream}) -> the output stream (plus the _keys metric rows
    # when the job keeps its own state: spark_jobs.io.key_metrics)
    build: Callable[[Any, Any, dict[str, Any]], Any]
    sink: Literal["append", "upsert"] = "append"  # upsert merges each batch on ``keys``
    # Columns that add up across rows of one key (column -> "sum" | "max"): the upsert sink merges
    # a batch's increments with them, and a backfill's append adds its rows to the live ones.
    additive: Mapping[str, str] = field(default_factory=dict)
    params: type[JobParams] = JobParams
    # The state kept per key by the job's own logic: a DDL string (applyInPandasWithState's
    # state row) or state variable -> DDL (transformWithState); None when Spark keeps it.
    state_schema: str | Mapping[str, str] | None = None
    # The batched executor's state row (one per hash bucket of the key: spark_jobs.state.buckets),
    # a DDL string; None when the job does not run on it.
    bucket_state_schema: str | None = None
    # How state stored under an earlier schema becomes today's (``upgrade migrate``): a rule from
    # an older ``state_schema`` gives a ``state_schema`` row, one from an older bucket layout a
    # ``bucket_state_schema`` row.
    state_rules: tuple[StateRule, ...] = ()
    # A value for a field a new release adds to the state row (or a transformWithState
    # variable's row), given to every key already in state by ``upgrade migrate``; null if absent.
    state_defaults: Mapping[str, Any] = field(default_factory=dict)
    # The columns the job's own state is kept per (its groupBy): ``upgrade plan`` compares them
    # with the key Spark stored; empty when Spark keeps the state (built-in operators).
    state_key: tuple[str, ...] = ()
    # Part of the checkpoint binding: state written in an older layout is refused, not misread.
    state_format: str | None = None
    # spec -> the time mode Spark pins in the checkpoint (transformWithState), bound likewise.
    time_mode: Callable[[Any], str] | None = None
    # spec -> {kind: {name: column}}, the columns its stateful operator groups that kind's
    # events by (a name not among the event's fields is added, e.g. a hash bucket): the runner
    # partitions the parsed lines on them (spark_jobs.io.events.shared), so the operator adds no
    # shuffle of its own. A wrong or missing one costs a second shuffle, never a wrong row.
    shuffle_keys: Callable[[Any], Mapping[str, Mapping[str, Any]]] | None = None
    # spec -> {kind: the event-time column its watermark is on}: the runner sets the watermark
    # below that shuffle (spark_jobs.io.watermarks); above it, the operator would shuffle again.
    # The job's build asks for it with ``watermarks.on``, which then adds nothing.
    watermarks: Callable[[Any], Mapping[str, str]] | None = None
    # spec -> event-time seconds the watermark must pass a row's ``time_column`` by before that
    # row is written (a session's gap, an unpaid order's payment window): the completeness rule
    # (spark_jobs.contract.completeness). 0: a row is written once the watermark reaches it.
    settles_after: Callable[[Any], float] = lambda spec: 0.0
    # Columns readers filter the output by: ``table maintain`` Z-orders the output on them
    # instead of bin-packing only (docs/tables.md); empty: bin-packing.
    cluster_by: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        cols = set(self.columns)
        named = (*self.keys, self.time_column, *self.additive, *self.cluster_by)
        wrong = [c for c in named if c not in cols]
        if wrong:
            raise ValueError(f"job {self.name}: {', '.join(wrong)} not in its schema")
        if self.sink not in SINKS:
            raise ValueError(f"job {self.name}: sink must be one of {', '.join(SINKS)}")
        bad = {op for op in self.additive.values() if op not in tables.ADDITIVE_OPS}
        if bad or not self.keys or not self.inputs:
            raise ValueError(f"job {self.name}: needs inputs and keys; additive ops are sum, max")

    @property
    def columns(self) -> list[str]:
        """The output columns' names, in order."""
        return tables.column_names(self.schema)

    def combined(self) -> dict[str, str] | None:
        """MERGE ``set`` expressions adding a row's additive columns to the live row's, or None
        when no column adds up."""
        return tables.combined(self.additive) if self.additive else None

    def parameters(self, spec: Any) -> JobParams:
        return self.params.of(spec)

    def comparable_params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """``params`` as the job reads them (defaults filled in, durations in seconds): two
        spellings of one configuration (``gap: 30 minutes`` or ``1800s``, a default written out
        or left out) compare equal. As given when this release's model refuses them (a binding
        an older release recorded)."""
        try:
            return self.params.model_validate(dict(params)).model_dump()
        except ValidationError:
            return dict(params)

    def fingerprint(self, spec: Any) -> dict[str, Any]:
        """What of the declaration a checkpoint's state depends on, beside the spec's."""
        out: dict[str, Any] = {}
        if self.time_mode is not None:
            out["time_mode"] = self.time_mode(spec)
        if self.state_format is not None:
            out["state_format"] = self.state_format
        return out

    def stored_state_schema(self, spec: Any) -> str | Mapping[str, str] | None:
        """The state row Spark keeps for ``spec``: the bucket's on the batched executor."""
        if spec.executor == "batched" and self.bucket_state_schema is not None:
            return self.bucket_state_schema
        return self.state_schema

    def declaration(self) -> dict[str, Any]:
        """What of the declaration the binding records beside the fingerprint (``declaration``):
        the key the job's own state is kept per and that state's schema (on the batched
        executor the buckets hold it in arrays, where Spark's schema check cannot see it).
        Compared only where a checkpoint recorded it, so older checkpoints are not refused."""
        out: dict[str, Any] = {}
        if self.state_key:
            out["state_key"] = list(self.state_key)
        if self.state_schema is not None:
            s = self.state_schema
            out["state_schema"] = s if isinstance(s, str) else dict(s)
        return out

    def check_spec(self, spec: Any) -> None:
        """The spec fits the job: the inputs it reads and valid parameters (one-line UserError)."""
        if sorted(spec.kinds) != sorted(self.inputs):
            raise UserError(
                f"job spec {spec.path or spec.name}: inputs must be {', '.join(self.inputs)} "
                f"(what job {self.name} reads), not {', '.join(spec.kinds)}"
            )
        self.parameters(spec)
