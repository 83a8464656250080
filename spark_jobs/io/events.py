"""Input event kinds (CONTRACTS.md section 2): required fields, their types, and the parse that
splits every landing line into a typed event or a bad record with its reason.

Lines are parsed to a VARIANT so a field's JSON type can be checked exactly: Spark's ``from_json``
would quietly turn ``"user_id": 123`` into ``"123"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

EVENT_TIME = "event_time"
# An ISO-8601 timestamp with a timezone; Spark's cast accepts zone-less ones too, so check first.
ISO_TS_WITH_ZONE = r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}(:?\d{2})?)$"


@dataclass(frozen=True)
class Field:
    name: str
    type: str  # str, int, num, ts
    nullable: bool = False
    allowed: tuple[str, ...] = ()

    @property
    def spark_type(self) -> str:
        return {"str": "string", "int": "bigint", "num": "decimal(18,2)", "ts": "timestamp"}[
            self.type
        ]


KINDS: dict[str, tuple[Field, ...]] = {
    "clickstream": (
        Field("event_id", "str"),
        Field("user_id", "str"),
        Field("event_type", "str"),
        Field("page", "str", nullable=True),
        Field("duration_sec", "int", nullable=True),
        Field(EVENT_TIME, "ts"),
    ),
    "auth": (
        Field("event_id", "str"),
        Field("user_id", "str"),
        Field("event_type", "str", allowed=("LOGIN_FAILED", "LOGIN_SUCCESS")),
        Field("ip", "str"),
        Field(EVENT_TIME, "ts"),
    ),
    "service-logs": (
        Field("service", "str"),
        Field("level", "str"),
        Field("message", "str"),
        Field(EVENT_TIME, "ts"),
    ),
    "orders": (
        Field("order_id", "str"),
        Field("user_id", "str"),
        Field("amount", "num"),
        Field(EVENT_TIME, "ts"),
    ),
    "payments": (
        Field("payment_id", "str"),
        Field("order_id", "str"),
        Field("amount", "num"),
        Field(EVENT_TIME, "ts"),
    ),
}

# JSON types (as schema_of_variant names them) that each field type accepts.
_ACCEPTS = {
    "str": ("STRING",),
    "int": ("BIGINT", "INT", "SMALLINT", "TINYINT"),
    "num": ("BIGINT", "INT", "SMALLINT", "TINYINT", "DOUBLE", "FLOAT", "DECIMAL"),
    "ts": ("STRING",),
}
_TYPE_WORDS = {
    "str": "a string",
    "int": "an integer",
    "num": "a number",
    "ts": "a timestamp string",
}


def fields(kind: str) -> tuple[Field, ...]:
    from spark_jobs.errors import UserError

    if kind not in KINDS:
        raise UserError(f"unknown event kind {kind!r}; kinds: {', '.join(KINDS)}")
    return KINDS[kind]


def spark_schema(kind: str) -> str:
    """The typed event schema of ``kind`` as a DDL string."""
    return ", ".join(f"{f.name} {f.spark_type}" for f in fields(kind))


def _json_type(v: Column, name: str) -> Column:
    from pyspark.sql import functions as F

    # NULL when the key is missing, "VOID" for a JSON null; DECIMAL(p,s) reduced to DECIMAL.
    t = F.schema_of_variant(F.try_variant_get(v, f"$.{name}", "variant"))
    return F.regexp_replace(t, r"\(.*\)$", "")


def _reason(v: Column, kind: str) -> Column:
    """The first thing wrong with a parsed line, or NULL for a good event."""
    from pyspark.sql import functions as F

    checks: list[tuple[Column, Column]] = [
        (v.isNull(), F.lit("malformed JSON")),
        (~F.schema_of_variant(v).startswith("OBJECT"), F.lit("not a JSON object")),
    ]
    for f in fields(kind):
        t = _json_type(v, f.name)
        absent = t.isNull() | (t == "VOID")
        if not f.nullable:
            checks.append((absent, F.lit(f"missing field {f.name}")))
        bad_type = ~absent & ~t.isin(*_ACCEPTS[f.type])
        checks.append(
            (
                bad_type,
                F.concat(F.lit(f"field {f.name} must be {_TYPE_WORDS[f.type]}, got "), F.lower(t)),
            )
        )
        if f.type == "ts":
            s = F.try_variant_get(v, f"$.{f.name}", "string")
            checks.append(
                (
                    ~absent & ~s.rlike(ISO_TS_WITH_ZONE),
                    F.lit(f"field {f.name} must be an ISO-8601 timestamp with a timezone"),
                )
            )
        if f.allowed:
            s = F.try_variant_get(v, f"$.{f.name}", "string")
            checks.append(
                (
                    ~absent & ~s.isin(*f.allowed),
                    F.lit(f"field {f.name} must be one of {', '.join(f.allowed)}"),
                )
            )
    expr = None
    for cond, msg in checks:
        expr = F.when(cond, msg) if expr is None else expr.when(cond, msg)
    assert expr is not None
    return expr


def _typed(v: Column, f: Field) -> Column:
    from pyspark.sql import functions as F

    if f.type == "ts":
        return F.try_to_timestamp(F.try_variant_get(v, f"$.{f.name}", "string")).alias(f.name)
    return F.try_variant_get(v, f"$.{f.name}", f.spark_type).alias(f.name)


def parse_lines(lines: DataFrame, kind: str) -> DataFrame:
    """``lines`` (``value``, ``source_file``) -> the typed fields plus ``_reason``, ``_raw``,
    ``_source_file``. Blank lines carry no event and are skipped."""
    from pyspark.sql import functions as F

    v = F.try_parse_json(F.col("value"))
    parsed = lines.where(F.trim(F.col("value")) != "").select(
        v.alias("_v"), F.col("value").alias("_raw"), F.col("source_file").alias("_source_file")
    )
    return parsed.select(
        *[_typed(F.col("_v"), f) for f in fields(kind)],
        _reason(F.col("_v"), kind).alias("_reason"),
        "_raw",
        "_source_file",
    )


def good_events(parsed: DataFrame, kind: str) -> DataFrame:
    from pyspark.sql import functions as F

    return parsed.where(F.col("_reason").isNull()).select(*[f.name for f in fields(kind)])


def bad_records(parsed: DataFrame, job: str, kind: str) -> DataFrame:
    """Bad lines as quarantine rows: raw line, reason, source file, time quarantined."""
    from pyspark.sql import functions as F

    return parsed.where(F.col("_reason").isNotNull()).select(
        F.col("_raw").alias("raw_line"),
        F.col("_reason").alias("reason"),
        F.col("_source_file").alias("source_file"),
        F.current_timestamp().alias("quarantined_at"),
        F.lit(job).alias("job"),
        F.lit(kind).alias("kind"),
    )
