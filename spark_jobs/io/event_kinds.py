"""Input event kinds (docs/contracts.md §2): each kind's fields, their JSON and Spark types,
and which values an enum field allows. The one table both the parse
(:mod:`spark_jobs.io.events`) and the generator read; no Spark import here.
"""

from __future__ import annotations

from dataclasses import dataclass

EVENT_TIME = "event_time"
# An ISO-8601 timestamp with a timezone; Spark's cast accepts zone-less ones too, so check first.
ISO_TS_WITH_ZONE = r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}(:?\d{2})?)$"


# An ``int`` field holds a 32-bit value, stored as bigint: a sum over 2^32 of them (a session's
# ``total_duration_sec``) still fits a bigint, where a sum of bigints overflows (an ANSI error in
# Spark, a silent wrap in numpy). A ``num`` field is stored as decimal(18,2).
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
INT_TEXT = r"^-?[0-9]+$"  # a JSON integer as the VARIANT's string value spells it


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
ACCEPTS = {
    "str": ("STRING",),
    "int": ("BIGINT", "INT", "SMALLINT", "TINYINT"),
    "num": ("BIGINT", "INT", "SMALLINT", "TINYINT", "DOUBLE", "FLOAT", "DECIMAL"),
    "ts": ("STRING",),
}
TYPE_WORDS = {
    "str": "a string",
    "int": "an integer",
    "num": "a number",
    "ts": "a timestamp string",
}


def fields(kind: str) -> tuple[Field, ...]:
    from spark_jobs.contract.errors import UserError

    if kind not in KINDS:
        raise UserError(f"unknown event kind {kind!r}; kinds: {', '.join(KINDS)}")
    return KINDS[kind]


def spark_schema(kind: str) -> str:
    """The typed event schema of ``kind`` as a DDL string."""
    return ", ".join(f"{f.name} {f.spark_type}" for f in fields(kind))
