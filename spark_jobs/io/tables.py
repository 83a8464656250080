"""The quarantine table's schema (docs/contracts.md §4) and the one reader of Spark DDL strings.

Each output table's schema, keys, time column and additive columns are declared by its job
(:class:`spark_jobs.jobs.declaration.JobDef`); what is here is the same for every job.
"""

from __future__ import annotations

from collections.abc import Mapping

QUARANTINE = (
    "raw_line string, reason string, source_file string, quarantined_at timestamp, "
    "job string, kind string"
)

# How an additive column combines a source row ``s`` into a target row ``t`` in a MERGE.
_COMBINE = {"sum": "t.`{c}` + s.`{c}`", "max": "greatest(t.`{c}`, s.`{c}`)"}
ADDITIVE_OPS = tuple(_COMBINE)


def ddl_fields(ddl: str) -> list[tuple[str, str]]:
    """``(name, type)`` of each top-level column of a DDL string such as
    ``"a string, b decimal(18,2), c array<string>"`` (commas inside ``<>`` or ``()`` do not split)."""
    parts, depth, cur = [], 0, ""
    for ch in ddl:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    fields = []
    for part in (p.strip() for p in parts):
        if not part:
            continue
        name_type = part.split(None, 1)
        if len(name_type) < 2:
            raise ValueError(f"DDL column {part!r} has no type")
        fields.append((name_type[0], name_type[1].strip()))
    return fields


def column_names(ddl: str) -> list[str]:
    return [name for name, _ in ddl_fields(ddl)]


def combined(additive: Mapping[str, str]) -> dict[str, str]:
    """MERGE ``set`` expressions combining source ``s`` into target ``t``: column -> op."""
    return {c: _COMBINE[op].format(c=c) for c, op in additive.items()}
