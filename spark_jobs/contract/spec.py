"""Job specs: ``include/jobs/JOB.yaml`` read in one place, for the Spark side and the DAGs alike.

A spec names a job's input(s), output, checkpoint, watermark, state store, trigger and parameters.
Relative paths are resolved by :func:`spark_jobs.contract.paths.resolve` (``.data/...`` under the
data folder), the same resolver the Airflow plugin uses.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic_core import PydanticUseDefault

from spark_jobs.contract import paths
from spark_jobs.contract.blocks import Freshness, Quality, Snapshots, Supervise, Tables
from spark_jobs.contract.durations import parse_seconds
from spark_jobs.contract.errors import UserError
from spark_jobs.contract.kafka import check_cluster, clusters_of, is_kafka
from spark_jobs.contract.spec_errors import one_line

DEFAULT_MAX_FUTURE_SECONDS = 86400.0  # max_future's default (1 day)
# max_future covers clock skew (a day or so). Past about 31,000 years, clock + max_future
# overflows Spark's interval arithmetic (ANSI: every batch fails); a limit far below that. The
# watermark's delay is held to it too: Spark cannot parse an interval of 10^11 days.
MAX_FUTURE_LIMIT_SECONDS = 100 * 365 * 86400.0
# Per-batch limits, so a backlog is read in batches that end: one batch of a whole backlog could
# outlast the task's timeout, be killed, and be planned again the same, for ever. Generated files
# hold up to 200,000 lines; a local driver parses about 30,000 lines a second (docs/jobs.md).
DEFAULT_MAX_FILES_PER_TRIGGER = 100
DEFAULT_MAX_OFFSETS_PER_TRIGGER = 1_000_000
# Words in a kafka_options name that mark its value secret (sasl.jaas.config carries the password).
SECRET_WORDS = ("jaas", "password", "secret", "token", "credential", "key")
MASK = "****"
# The choices a spec offers, as types (the spec file's model checks them) and as tuples.
Pattern = Literal["arbitrary", "builtin"]  # our state logic, or Spark's own operators
Mode = Literal["catch-up", "continuous"]
StateStore = Literal["rocksdb", "hdfs"]
OutputMode = Literal["append", "update"]
Executor = Literal["per-key", "batched"]
Completeness = Literal["hourly", "daily"]
STATE_STORES = get_args(StateStore)
MODES = get_args(Mode)
OUTPUT_MODES = get_args(OutputMode)
TRIGGER_HELP = "available-now or processing-time:30s"
# The event-time partitions whose completeness is announced (spark_jobs.contract.completeness).
COMPLETENESS = get_args(Completeness)


@dataclass(frozen=True)
class Trigger:
    """``available-now`` (process everything, then stop) or ``processing-time`` every N seconds."""

    kind: str
    interval_seconds: float = 0.0

    @classmethod
    def parse(cls, text: str) -> Trigger:
        text = str(text).strip()
        if text in ("available-now", "availableNow", "available_now"):
            return cls("available-now")
        if text.startswith("processing-time:"):
            secs = parse_seconds(text.split(":", 1)[1], "trigger interval")
            if secs <= 0:
                raise UserError(f"trigger interval in {text!r} must be positive")
            return cls("processing-time", secs)
        raise UserError(f"unknown trigger {text!r}; use {TRIGGER_HELP}")

    @property
    def available_now(self) -> bool:
        return self.kind == "available-now"

    def __str__(self) -> str:
        if self.available_now:
            return "available-now"
        return f"processing-time:{self.interval_seconds:g}s"


def is_secret(name: str) -> bool:
    """Whether a ``kafka_options`` name marks its value secret (never shown, never logged)."""
    n = name.lower()
    return any(w in n for w in SECRET_WORDS) and not n.endswith((".type", ".location"))


def masked(options: dict[str, Any]) -> dict[str, Any]:
    """The options as they may be shown: secret values replaced by ``****``."""
    return {k: MASK if is_secret(k) else v for k, v in options.items()}


@dataclass(frozen=True)
class JobSpec:
    name: str
    description: str
    pattern: str  # "arbitrary" (our state logic) or "builtin" (Spark's own operators)
    mode: str  # catch-up (scheduled available-now runs) or continuous (supervised)
    schedule: str | None
    inputs: dict[str, str]  # input kind -> landing folder URI or kafka://HOST:PORT/TOPIC
    output: str
    checkpoint: str
    trigger: Trigger
    watermark_seconds: float
    state_store: str
    changelog_checkpointing: bool
    shuffle_partitions: int
    min_batches_to_retain: int
    max_files_per_trigger: int  # file inputs: files per micro-batch at most
    output_mode: str
    executor: str
    params: dict[str, Any] = field(default_factory=dict)
    quality: Quality = field(default_factory=Quality)
    snapshots: Snapshots = field(default_factory=Snapshots)
    supervise: Supervise = field(default_factory=Supervise)
    tables: Tables = field(default_factory=Tables)
    owner: str = "platform"
    tags: tuple[str, ...] = ()
    path: str = ""
    # Events further ahead of the batch's clock than this are quarantined (docs/contracts.md §2).
    max_future_seconds: float = DEFAULT_MAX_FUTURE_SECONDS
    # Kafka inputs: records per micro-batch at most, over all partitions
    max_offsets_per_trigger: int = DEFAULT_MAX_OFFSETS_PER_TRIGGER
    # Kafka consumer properties passed through (security for real clusters); kept out of repr,
    # masked in to_dict, never logged.
    kafka_options: dict[str, str] = field(default_factory=dict, repr=False)
    fail_on_data_loss: bool = True  # Kafka inputs: a gap in the topic stops the job
    # The Kafka clusters the spec file's inputs name (contract.kafka.cluster_of): kept through
    # overrides, so a run-time input can be held to them and kafka_options go nowhere else.
    kafka_clusters: tuple[str, ...] = ()
    completeness: str = COMPLETENESS[0]  # the grain of the completeness events' partitions
    freshness: Freshness = field(default_factory=Freshness)

    @property
    def kinds(self) -> list[str]:
        return list(self.inputs)

    @property
    def input(self) -> str:
        """The single input of a one-source job."""
        return next(iter(self.inputs.values()))

    @property
    def quarantine(self) -> str:
        return paths.quarantine_table(self.output)

    def with_overrides(
        self,
        input: str | list[str] | None = None,
        output: str | None = None,
        checkpoint: str | None = None,
        trigger: str | None = None,
    ) -> JobSpec:
        """The spec with the command line's ``--input/--output/--checkpoint/--trigger`` applied."""
        changes: dict[str, Any] = {}
        if input:
            changes["inputs"] = _override_inputs(self, [input] if isinstance(input, str) else input)
        if output:
            changes["output"] = paths.resolve(output)
        if checkpoint:
            changes["checkpoint"] = paths.resolve(checkpoint)
        if trigger:
            changes["trigger"] = Trigger.parse(trigger)
        return replace(self, **changes)

    def state_fingerprint(self) -> dict[str, Any]:
        """What a checkpoint's state depends on: changing any of these breaks restored state."""
        return {
            "job": self.name,
            "pattern": self.pattern,
            "executor": self.executor,
            "state_store": self.state_store,
            "shuffle_partitions": self.shuffle_partitions,
            "watermark_seconds": self.watermark_seconds,
            "output_mode": self.output_mode,
            "kinds": self.kinds,
            "params": {k: v for k, v in sorted(self.params.items()) if k not in ("alert_note",)},
        }

    def fingerprint_hash(self) -> str:
        raw = json.dumps(self.state_fingerprint(), sort_keys=True, default=str)
        return hashlib.sha256(raw.encode()).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["trigger"] = str(self.trigger)
        for block in ("quality", "snapshots", "supervise", "freshness", "tables"):
            d[block] = getattr(self, block).model_dump()
        d["kafka_options"] = masked(self.kafka_options)
        return d


def split_input(value: str) -> tuple[str | None, str]:
    """An ``--input`` value as (kind, uri) for ``KIND=URI``, else (None, value)."""
    kind, sep, uri = value.partition("=")
    if sep and "://" not in kind and "/" not in kind:
        return kind, uri
    return None, value


def _override_inputs(spec: JobSpec, values: list[str]) -> dict[str, str]:
    """``--input URI`` (one-source job, or a root holding one folder per kind) or ``KIND=URI``.
    A Kafka URI must be on one of the spec's own clusters (contract.kafka.check_cluster)."""
    out = dict(spec.inputs)
    for v in values:
        kind, uri = split_input(v)
        if kind is not None:
            if kind not in out:
                raise UserError(
                    f"job {spec.name} has no input {kind!r}; its inputs: {', '.join(out)}"
                )
            out[kind] = paths.resolve(uri)
        elif len(out) == 1:
            out = {spec.kinds[0]: paths.resolve(v)}
        elif is_kafka(v):
            raise UserError(
                f"job {spec.name} reads {', '.join(out)}: give one topic per input, as "
                f"--input KIND=kafka://HOST:PORT/TOPIC"
            )
        else:
            out = {k: paths.join(paths.resolve(v), k) for k in out}
    for uri in out.values():
        if is_kafka(uri) and uri not in spec.inputs.values():
            check_cluster(uri, spec.kafka_clusters, spec.name)
    return out


def load_spec(name: str, spec_dir: Path | None = None) -> JobSpec:
    """The spec of job ``name``; a one-line UserError for an unknown job or a bad spec."""
    folder = spec_dir or paths.specs_dir()
    path = folder / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(list_jobs(folder)) or "none"
        raise UserError(f"unknown job {name!r}; known jobs: {known}")
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        where = f" line {line + 1}" if line is not None else ""
        raise UserError(f"job spec {path}{where} is not valid YAML") from exc
    return parse_spec(raw, str(path), default_name=name)


def _empty_is_default(value: Any) -> Any:
    # ``params:`` with nothing under it is YAML's None: the block's default, not an error
    if value is None:
        raise PydanticUseDefault()
    return value


def _duration(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError("not a duration")
    try:
        return parse_seconds(value)
    except UserError as exc:  # pydantic reports ValueErrors as the field's error
        raise ValueError("not a duration") from exc


Duration = Annotated[float, BeforeValidator(_duration)]
# Spark takes shuffle partitions, batches to retain and files per trigger as 32-bit ints: a
# larger value is refused here in one line, not by Spark's conf check as a JVM stack trace.
SPARK_INT_MAX = 2**31 - 1
Count = Annotated[int, Field(ge=1, le=SPARK_INT_MAX)]
_Maybe = BeforeValidator(_empty_is_default)


class SpecFile(BaseModel):
    """A spec file as written (``include/jobs/JOB.yaml``): every key, its type and its default,
    in one place. :func:`parse_spec` turns it into a :class:`JobSpec` (paths resolved, the
    trigger parsed); a bad value is one line naming the file and the key
    (:func:`spark_jobs.contract.spec_errors.one_line`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = None
    description: str = ""
    pattern: Pattern = "arbitrary"
    mode: Mode = "catch-up"
    schedule: str | None = None
    inputs: dict[str, str] = Field(min_length=1)
    output: str
    checkpoint: str
    trigger: str = "available-now"
    watermark: Annotated[Duration, Field(le=MAX_FUTURE_LIMIT_SECONDS)]
    state_store: StateStore = "rocksdb"
    changelog_checkpointing: bool = True
    shuffle_partitions: Count = 4
    min_batches_to_retain: Count = 20
    max_files_per_trigger: Count = DEFAULT_MAX_FILES_PER_TRIGGER
    max_offsets_per_trigger: Annotated[int, Field(ge=1)] = DEFAULT_MAX_OFFSETS_PER_TRIGGER  # a long
    output_mode: OutputMode = "append"
    executor: Executor = "per-key"
    params: Annotated[dict[str, Any], _Maybe] = Field(default_factory=dict)
    quality: Annotated[Quality, _Maybe] = Field(default_factory=Quality)
    snapshots: Annotated[Snapshots, _Maybe] = Field(default_factory=Snapshots)
    supervise: Annotated[Supervise, _Maybe] = Field(default_factory=Supervise)
    tables: Annotated[Tables, _Maybe] = Field(default_factory=Tables)
    freshness: Annotated[Freshness, _Maybe] = Field(default_factory=Freshness)
    owner: str = "platform"
    tags: Annotated[tuple[str, ...], _Maybe] = ()
    max_future: Annotated[Duration, Field(gt=0, le=MAX_FUTURE_LIMIT_SECONDS)] = (
        DEFAULT_MAX_FUTURE_SECONDS
    )
    kafka_options: Annotated[dict[str, str | int | float | bool], _Maybe] = Field(
        default_factory=dict
    )
    fail_on_data_loss: bool = True
    completeness: Completeness = "hourly"


def parse_spec(raw: dict[str, Any], where: str, default_name: str | None = None) -> JobSpec:
    """The spec file's mapping ``raw`` (from ``where``) checked against :class:`SpecFile`,
    as the :class:`JobSpec` the commands and DAGs use."""
    if not isinstance(raw, dict):
        raise UserError(f"job spec {where} must be a mapping")
    try:
        f = SpecFile.model_validate(raw)
    except ValidationError as exc:
        raise UserError(one_line(exc, SpecFile, raw, where)) from None
    resolved = {str(k): paths.resolve(str(v)) for k, v in f.inputs.items()}
    return JobSpec(
        name=str(f.name if f.name is not None else default_name),
        description=f.description.strip(),
        pattern=f.pattern,
        mode=f.mode,
        schedule=f.schedule,
        inputs=resolved,
        output=paths.resolve(f.output),
        checkpoint=paths.resolve(f.checkpoint),
        trigger=Trigger.parse(f.trigger),
        watermark_seconds=f.watermark,
        state_store=f.state_store,
        changelog_checkpointing=f.changelog_checkpointing,
        shuffle_partitions=f.shuffle_partitions,
        min_batches_to_retain=f.min_batches_to_retain,
        max_files_per_trigger=f.max_files_per_trigger,
        output_mode=f.output_mode,
        executor=f.executor,
        params=dict(f.params),
        quality=f.quality,
        snapshots=f.snapshots,
        supervise=f.supervise,
        tables=f.tables,
        owner=f.owner,
        tags=f.tags,
        path=where,
        max_future_seconds=f.max_future,
        max_offsets_per_trigger=f.max_offsets_per_trigger,
        kafka_options={str(k): str(v) for k, v in f.kafka_options.items()},
        fail_on_data_loss=f.fail_on_data_loss,
        kafka_clusters=clusters_of(resolved.values()),
        completeness=f.completeness,
        freshness=f.freshness,
    )


def list_jobs(spec_dir: Path | None = None) -> list[str]:
    folder = spec_dir or paths.specs_dir()
    return sorted(p.stem for p in folder.glob("*.yaml"))


def load_all(spec_dir: Path | None = None) -> list[JobSpec]:
    return [load_spec(n, spec_dir) for n in list_jobs(spec_dir)]
