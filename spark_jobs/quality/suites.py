"""Expectation suites: ``include/expectations/JOB.yaml`` read and expanded into checks.

A suite file lists checks, each with a severity: ``warn`` (recorded) or ``fail`` (the run fails and
downstream consumers are not signalled). An entry is either a Great Expectations expectation by
its own name with its arguments::

    - expect: expect_column_pair_values_a_to_be_greater_than_b
      column_A: session_end
      column_B: session_start
      or_equal: true
      severity: fail
      name: session_end >= session_start     # the label in the CLI's table (optional)
      why: a session cannot end before it starts

or one of the project's named checks, which expand from the one place that knows the facts:

- ``schema``: column names in order and each column's Spark type, from the job's declaration
  (``JOB.schema`` in its module, :mod:`spark_jobs.jobs.declaration`);
- ``keys``: every key column not null, the key unique, from ``JOB.keys``;
- ``freshness``: the newest ``JOB.time_column`` value within the spec's ``quality.freshness_sla`` of
  the job's watermark (else the run time);
- ``volume``: the new rows within ``min_ratio``..``max_ratio`` of the median of the trailing runs;
- ``quarantine_rate``: rows quarantined / records read at most the spec's
  ``quality.max_quarantine_rate`` (validated on ``<output>/_quarantine``).

Values may refer to the job spec as ``${params.threshold}`` or ``${quality.freshness_sla}``, so no
threshold is written twice. This module imports neither Spark nor Great Expectations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from spark_jobs.contract import paths
from spark_jobs.contract.blocks import Quality
from spark_jobs.contract.durations import describe
from spark_jobs.contract.errors import UserError
from spark_jobs.io import tables
from spark_jobs.jobs import definition

SEVERITIES = {"warn": "warning", "fail": "critical"}  # ours -> Great Expectations' FailureSeverity
MACROS = ("schema", "keys", "freshness", "volume", "quarantine_rate")
TABLE, QUARANTINE = "table", "quarantine"  # which batch a check runs on

# Run-time values handed to Great Expectations as suite parameters ($PARAMETER), so the suite
# itself stays the same from run to run.
P_FRESHNESS_FLOOR = "freshness_floor"
P_VOLUME_MIN = "volume_min"
P_VOLUME_MAX = "volume_max"
P_QUARANTINE_MAX = "max_quarantine_rows"

VOLUME_DEFAULTS = {"trailing_runs": 5, "min_runs": 2, "min_ratio": 0.2, "max_ratio": 5.0}

# DDL type -> the pyspark.sql.types class name expect_column_values_to_be_of_type checks.
_SPARK_TYPES = {
    "string": "StringType",
    "timestamp": "TimestampType",
    "timestamp_ntz": "TimestampNTZType",
    "date": "DateType",
    "bigint": "LongType",
    "long": "LongType",
    "int": "IntegerType",
    "integer": "IntegerType",
    "smallint": "ShortType",
    "double": "DoubleType",
    "float": "FloatType",
    "boolean": "BooleanType",
    "binary": "BinaryType",
}
_SPEC_REF = re.compile(r"^\$\{([a-z_]+)\.([a-z_]+)\}$")


@dataclass(frozen=True)
class Check:
    """One expectation with our severity and a label a person can read in the CLI's table."""

    label: str
    expectation: str  # Great Expectations' snake_case name, e.g. expect_column_values_to_be_unique
    kwargs: dict[str, Any]
    severity: str  # warn | fail
    target: str = TABLE
    macro: str | None = None
    why: str = ""

    @property
    def gx_severity(self) -> str:
        return SEVERITIES[self.severity]

    @property
    def column(self) -> str | None:
        for key in ("column", "column_A"):
            if key in self.kwargs:
                return str(self.kwargs[key])
        if (
            "column_list" in self.kwargs
            and self.expectation != "expect_table_columns_to_match_ordered_list"
        ):
            return ",".join(self.kwargs["column_list"])
        return None


@dataclass(frozen=True)
class Suite:
    job: str
    path: str
    checks: tuple[Check, ...]
    volume: dict[str, float] = field(default_factory=lambda: dict(VOLUME_DEFAULTS))
    samples: int = 0  # unexpected values kept per failing check (each costs a Spark job)

    def for_target(self, target: str) -> list[Check]:
        return [c for c in self.checks if c.target == target]

    @property
    def name(self) -> str:
        return self.job

    @property
    def quarantine_name(self) -> str:
        return f"{self.job}.quarantine"


def suites_dir() -> Path:
    return paths.project_root() / "include" / "expectations"


def load_suite(spec: Any, folder: Path | None = None) -> Suite:
    """The suite of ``spec``'s job, expanded; a one-line UserError when missing or malformed."""
    path = (folder or suites_dir()) / f"{spec.name}.yaml"
    if not path.is_file():
        raise UserError(f"no expectation suite for job {spec.name}: create {path}")
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise UserError(f"expectation suite {path} is not valid YAML") from exc
    return parse_suite(raw, spec, str(path))


def parse_suite(raw: Any, spec: Any, where: str) -> Suite:
    if not isinstance(raw, dict) or not isinstance(raw.get("checks"), list):
        raise UserError(f"expectation suite {where}: needs a list under 'checks'")
    table = raw.get("table", spec.name)
    if table != spec.name:
        raise UserError(f"expectation suite {where} is for table {table!r}, not {spec.name!r}")
    definition(spec.name)  # a one-line error when no module declares the job
    checks: list[Check] = []
    volume = dict(VOLUME_DEFAULTS)
    for i, entry in enumerate(raw["checks"], start=1):
        if not isinstance(entry, dict):
            raise UserError(f"expectation suite {where}: check {i} must be a mapping")
        entry = {k: _resolve(v, spec, where) for k, v in entry.items()}
        severity = entry.pop("severity", None)
        if severity not in SEVERITIES:
            raise UserError(
                f"expectation suite {where}: check {i} needs severity warn or fail, not {severity!r}"
            )
        why = str(entry.pop("why", "") or "")
        if "check" in entry:
            macro = entry.pop("check")
            if macro == "volume":
                bad = set(entry) - set(VOLUME_DEFAULTS)
                if bad:
                    raise UserError(
                        f"expectation suite {where}: volume takes {', '.join(VOLUME_DEFAULTS)}, not {', '.join(sorted(bad))}"
                    )
                volume.update({k: float(v) for k, v in entry.items()})
            elif entry:
                raise UserError(
                    f"expectation suite {where}: check {macro!r} takes no options ({', '.join(entry)})"
                )
            checks.extend(expand(macro, spec, severity, why, where))
        elif "expect" in entry:
            name = str(entry.pop("expect"))
            label = str(entry.pop("name", "") or "")
            if not name.startswith("expect_"):
                raise UserError(
                    f"expectation suite {where}: check {i}: {name!r} is not an expect_... name"
                )
            checks.append(
                Check(label or _label(name, entry), name, entry, severity, TABLE, None, why)
            )
        else:
            raise UserError(f"expectation suite {where}: check {i} needs 'expect:' or 'check:'")
    labels = [c.label for c in checks]
    dupes = sorted({x for x in labels if labels.count(x) > 1})
    if dupes:
        raise UserError(f"expectation suite {where}: checks repeated: {', '.join(dupes)}")
    samples = raw.get("samples", 0)
    if not isinstance(samples, int) or samples < 0:
        raise UserError(f"expectation suite {where}: samples must be a whole number >= 0")
    return Suite(spec.name, where, tuple(checks), volume, samples)


def expand(macro: str, spec: Any, severity: str, why: str, where: str = "") -> list[Check]:
    """A named check as the Great Expectations expectations it stands for."""
    build = _MACRO_CHECKS.get(macro)
    if build is None:
        raise UserError(
            f"expectation suite {where}: unknown check {macro!r}; known: {', '.join(MACROS)}"
        )
    return build(_Maker(severity, macro, why), spec)


@dataclass(frozen=True)
class _Maker:
    """Makes a macro's checks: its severity and name, and the suite's ``why`` when it has one
    (else the macro's own reason)."""

    severity: str
    macro: str
    why: str

    def __call__(
        self, label: str, exp: str, kwargs: dict[str, Any], why: str = "", target: str = TABLE
    ) -> Check:
        return Check(label, exp, kwargs, self.severity, target, self.macro, self.why or why)


def _schema(c: _Maker, spec: Any) -> list[Check]:
    cols = column_types(spec.name)
    out = [
        c(
            "schema: columns",
            "expect_table_columns_to_match_ordered_list",
            {"column_list": list(cols)},
            "the table has the contract's columns, in order",
        )
    ]
    for col, typ in cols.items():
        out.append(
            c(
                f"schema: {col} is {typ}",
                "expect_column_values_to_be_of_type",
                {"column": col, "type_": typ},
            )
        )
    return out


def _keys(c: _Maker, spec: Any) -> list[Check]:
    keys = definition(spec.name).keys
    out = [
        c(
            f"keys: {k} not null",
            "expect_column_values_to_not_be_null",
            {"column": k},
            "a row without its key cannot be joined or upserted",
        )
        for k in keys
    ]
    kwargs: dict[str, Any]
    if len(keys) == 1:
        exp, label, kwargs = "expect_column_values_to_be_unique", keys[0], {"column": keys[0]}
    else:
        exp, label = "expect_compound_columns_to_be_unique", f"({', '.join(keys)})"
        kwargs = {"column_list": list(keys)}
    return [*out, c(f"keys: {label} unique", exp, kwargs, "one row per key")]


def _freshness(c: _Maker, spec: Any) -> list[Check]:
    col = definition(spec.name).time_column
    sla = spec.quality.freshness_sla
    if sla is None:
        raise UserError(f"job {spec.name}: freshness needs quality.freshness_sla in {spec.path}")
    return [
        c(
            f"freshness: newest {col} within {describe(sla)}",
            "expect_column_max_to_be_between",
            {"column": col, "min_value": {"$PARAMETER": P_FRESHNESS_FLOOR}},
            f"the newest {col} is at most {describe(sla)} behind the job's watermark "
            "(or the run time)",
        )
    ]


def _volume(c: _Maker, spec: Any) -> list[Check]:
    bounds = {"min_value": {"$PARAMETER": P_VOLUME_MIN}, "max_value": {"$PARAMETER": P_VOLUME_MAX}}
    return [
        c(
            "volume: new rows vs trailing runs",
            "expect_table_row_count_to_be_between",
            bounds,
            "the new rows are in line with the trailing runs",
        )
    ]


def _quarantine_rate(c: _Maker, spec: Any) -> list[Check]:
    rate = spec.quality.max_quarantine_rate
    if rate is None:
        raise UserError(
            f"job {spec.name}: quarantine_rate needs quality.max_quarantine_rate in {spec.path}"
        )
    return [
        c(
            f"quarantine: rate <= {rate:g}",
            "expect_table_row_count_to_be_between",
            {"min_value": 0, "max_value": {"$PARAMETER": P_QUARANTINE_MAX}},
            "bad records / all records read stays below the spec's threshold",
            QUARANTINE,
        ),
        # says why on its own: the suite's reason is about the rate
        Check(
            "quarantine: reason not null",
            "expect_column_values_to_not_be_null",
            {"column": "reason"},
            c.severity,
            QUARANTINE,
            c.macro,
            "every quarantined record says why",
        ),
    ]


_MACRO_CHECKS = {
    "schema": _schema,
    "keys": _keys,
    "freshness": _freshness,
    "volume": _volume,
    "quarantine_rate": _quarantine_rate,
}
assert tuple(_MACRO_CHECKS) == MACROS


def column_types(job: str) -> dict[str, str]:
    """Column -> pyspark type class name, from the job's declared schema."""
    return {name: spark_type_name(ddl) for name, ddl in tables.ddl_fields(definition(job).schema)}


def spark_type_name(ddl: str) -> str:
    t = ddl.strip().lower()
    if t.startswith("array<"):
        return "ArrayType"
    if t.startswith("map<"):
        return "MapType"
    if t.startswith("struct<"):
        return "StructType"
    if t.startswith("decimal"):
        return "DecimalType"
    if t not in _SPARK_TYPES:
        raise UserError(f"no Spark type known for DDL type {ddl!r}")
    return _SPARK_TYPES[t]


def _resolve(value: Any, spec: Any, where: str) -> Any:
    """``${params.x}`` / ``${quality.x}`` -> the spec's value (numbers stay numbers; a
    ``quality`` duration is its seconds)."""
    if isinstance(value, list):
        return [_resolve(v, spec, where) for v in value]
    if not isinstance(value, str):
        return value
    m = _SPEC_REF.match(value.strip())
    if not m:
        return value
    section, key = m.groups()
    if section == "params" and key in spec.params:
        return spec.params[key]
    # the typed quality block: an unknown name and an unset threshold alike are "not set"
    if (
        section == "quality"
        and key in Quality.model_fields
        and getattr(spec.quality, key) is not None
    ):
        return getattr(spec.quality, key)
    raise UserError(f"expectation suite {where}: {value} is not set in {spec.path}")


def _label(name: str, kwargs: dict[str, Any]) -> str:
    short = name.removeprefix("expect_")
    args = ", ".join(f"{k}={v}" for k, v in kwargs.items() if k not in ("mostly",))
    return f"{short}({args})"
