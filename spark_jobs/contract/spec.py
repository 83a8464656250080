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
from typing import Any

import yaml

from spark_jobs.contract import paths
from spark_jobs.contract.blocks import Freshness, Quality, Snapshots, Supervise, Tables, parse_block
from spark_jobs.contract.durations import parse_seconds
from spark_jobs.contract.errors import UserError
from spark_jobs.contract.kafka import check_cluster, clusters_of, is_kafka

DEFAULT_MAX_FUTURE_SECONDS = 86400.0  # max_future's default (1 day)
# max_future covers clock skew (a day or so). Past about 31,000 years, clock + max_future
# overflows Spark's interval arithmetic (ANSI: every batch fails); a limit far below that.
MAX_FUTURE_LIMIT_SECONDS = 100 * 365 * 86400.0
# Per-batch limits, so a backlog is read in batches that end: one batch of a whole backlog could
# outlast the task's timeout, be killed, and be planned again the same, for ever. Generated files
# hold up to 200,000 lines; a local driver parses about 30,000 lines a second (docs/jobs.md).
DEFAULT_MAX_FILES_PER_TRIGGER = 100
DEFAULT_MAX_OFFSETS_PER_TRIGGER = 1_000_000
# Words in a kafka_options name that mark its value secret (sasl.jaas.config carries the password).
SECRET_WORDS = ("jaas", "password", "secret", "token", "credential", "key")
MASK = "****"
STATE_STORES = ("rocksdb", "hdfs")
MODES = ("catch-up", "continuous")
OUTPUT_MODES = ("append", "update")
TRIGGER_HELP = "available-now or processing-time:30s"
# The event-time partitions whose completeness is announced (spark_jobs.contract.completeness).
COMPLETENESS = ("hourly", "daily")

_KNOWN_KEYS = {
    "name", "description", "pattern", "mode", "schedule", "inputs", "output", "checkpoint",
    "trigger", "watermark", "state_store", "changelog_checkpointing", "shuffle_partitions",
    "min_batches_to_retain", "max_files_per_trigger", "output_mode", "executor", "params",
    "quality", "snapshots", "supervise", "owner", "tags", "max_future", "max_offsets_per_trigger",
    "kafka_options", "fail_on_data_loss", "completeness", "freshness", "tables",
}  # fmt: skip


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
    # Events further ahead of the batch's clock than this are quarantined (CONTRACTS.md s. 2).
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


def _override_inputs(spec: JobSpec, values: list[str]) -> dict[str, str]:
    """``--input URI`` (one-source job, or a root holding one folder per kind) or ``KIND=URI``.
    A Kafka URI must be on one of the spec's own clusters (contract.kafka.check_cluster)."""
    out = dict(spec.inputs)
    for v in values:
        kind, sep, uri = v.partition("=")
        if sep and "://" not in kind and "/" not in kind:
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


def parse_spec(raw: dict[str, Any], where: str, default_name: str | None = None) -> JobSpec:
    if not isinstance(raw, dict):
        raise UserError(f"job spec {where} must be a mapping")
    unknown = sorted(set(raw) - _KNOWN_KEYS)
    if unknown:
        raise UserError(f"job spec {where}: unknown key(s) {', '.join(unknown)}")

    def need(key: str) -> Any:
        if key not in raw:
            raise UserError(f"job spec {where}: missing required key {key!r}")
        return raw[key]

    def choice(key: str, allowed: tuple[str, ...], default: str) -> str:
        val = str(raw.get(key, default))
        if val not in allowed:
            raise UserError(
                f"job spec {where}: {key} must be one of {', '.join(allowed)}, not {val!r}"
            )
        return val

    inputs = need("inputs")
    if not isinstance(inputs, dict) or not inputs:
        raise UserError(f"job spec {where}: inputs must map an input kind to a folder")
    try:
        shuffle = int(raw.get("shuffle_partitions", 4))
        retain = int(raw.get("min_batches_to_retain", 20))
        mfpt = int(raw.get("max_files_per_trigger", DEFAULT_MAX_FILES_PER_TRIGGER))
        mopt = int(raw.get("max_offsets_per_trigger", DEFAULT_MAX_OFFSETS_PER_TRIGGER))
    except (TypeError, ValueError) as exc:
        raise UserError(f"job spec {where}: {exc}") from exc
    max_future = parse_seconds(
        raw.get("max_future", DEFAULT_MAX_FUTURE_SECONDS), f"max_future in {where}"
    )
    if not 0 < max_future <= MAX_FUTURE_LIMIT_SECONDS:
        raise UserError(f"job spec {where}: max_future must be positive and at most 100 years")
    kafka_options = raw.get("kafka_options") or {}
    if not isinstance(kafka_options, dict):
        raise UserError(f"job spec {where}: kafka_options must map consumer properties to values")
    if mopt < 1 or mfpt < 1:
        raise UserError(
            f"job spec {where}: max_files_per_trigger and max_offsets_per_trigger must be >= 1"
        )
    if shuffle < 1 or retain < 1:
        raise UserError(
            f"job spec {where}: shuffle_partitions and min_batches_to_retain must be >= 1"
        )
    resolved = {str(k): paths.resolve(str(v)) for k, v in inputs.items()}
    return JobSpec(
        name=str(raw.get("name", default_name)),
        description=str(raw.get("description", "")).strip(),
        pattern=choice("pattern", ("arbitrary", "builtin"), "arbitrary"),
        mode=choice("mode", MODES, "catch-up"),
        schedule=raw.get("schedule"),
        inputs=resolved,
        output=paths.resolve(str(need("output"))),
        checkpoint=paths.resolve(str(need("checkpoint"))),
        trigger=Trigger.parse(raw.get("trigger", "available-now")),
        watermark_seconds=parse_seconds(need("watermark"), f"watermark in {where}"),
        state_store=choice("state_store", STATE_STORES, "rocksdb"),
        changelog_checkpointing=bool(raw.get("changelog_checkpointing", True)),
        shuffle_partitions=shuffle,
        min_batches_to_retain=retain,
        max_files_per_trigger=mfpt,
        output_mode=choice("output_mode", OUTPUT_MODES, "append"),
        executor=choice("executor", ("per-key", "batched"), "per-key"),
        params=dict(raw.get("params") or {}),
        quality=parse_block(Quality, raw.get("quality"), "quality", where),
        snapshots=parse_block(Snapshots, raw.get("snapshots"), "snapshots", where),
        supervise=parse_block(Supervise, raw.get("supervise"), "supervise", where),
        tables=parse_block(Tables, raw.get("tables"), "tables", where),
        owner=str(raw.get("owner", "platform")),
        tags=tuple(raw.get("tags") or ()),
        path=where,
        max_future_seconds=max_future,
        max_offsets_per_trigger=mopt,
        kafka_options={str(k): str(v) for k, v in kafka_options.items()},
        fail_on_data_loss=bool(raw.get("fail_on_data_loss", True)),
        kafka_clusters=clusters_of(resolved.values()),
        completeness=choice("completeness", COMPLETENESS, COMPLETENESS[0]),
        freshness=parse_block(Freshness, raw.get("freshness"), "freshness", where),
    )


def list_jobs(spec_dir: Path | None = None) -> list[str]:
    folder = spec_dir or paths.specs_dir()
    return sorted(p.stem for p in folder.glob("*.yaml"))


def load_all(spec_dir: Path | None = None) -> list[JobSpec]:
    return [load_spec(n, spec_dir) for n in list_jobs(spec_dir)]
