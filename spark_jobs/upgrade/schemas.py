"""Spark types as one spelling, so a DDL string (a declaration) and Spark's JSON schemas (the
stored state schema, a Delta table's ``schemaString``) can be compared field by field."""

from __future__ import annotations

import json
import re
from typing import Any

from spark_jobs.io.tables import ddl_fields

# DDL aliases and JSON names -> the one spelling used here
_ALIASES = {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint"}

Fields = list[tuple[str, str]]  # (name, type), in order


def norm_type(t: str) -> str:
    """A DDL type in one spelling: lower case, no spaces, aliases resolved."""
    t = re.sub(r"\s+", "", t.lower())
    return re.sub(r"[a-z_][a-z0-9_]*", lambda m: _ALIASES.get(m.group(0), m.group(0)), t)


def json_type(t: Any) -> str:
    """A type of Spark's JSON schema as DDL (``{"type": "array", "elementType": "string"}`` ->
    ``array<string>``)."""
    if isinstance(t, str):
        return norm_type(t)
    kind = t.get("type")
    if kind == "array":
        return f"array<{json_type(t['elementType'])}>"
    if kind == "map":
        return f"map<{json_type(t['keyType'])},{json_type(t['valueType'])}>"
    if kind == "struct":
        inner = ",".join(f"{f['name']}:{json_type(f['type'])}" for f in t.get("fields", []))
        return f"struct<{inner}>"
    return norm_type(str(kind))


def json_fields(schema: dict[str, Any]) -> Fields:
    """The top-level fields of a JSON struct schema."""
    return [(str(f["name"]), json_type(f["type"])) for f in schema.get("fields", [])]


def ddl(text: str) -> Fields:
    return [(n.strip("`"), norm_type(t)) for n, t in ddl_fields(text)]


def structs_in(blob: bytes) -> list[dict[str, Any]]:
    """The JSON struct schemas in a schema file Spark wrote (a version line and length-prefixed
    JSON strings: key schema, then value schema), in order."""
    text = blob.decode("utf-8", errors="replace")
    out: list[dict[str, Any]] = []
    dec = json.JSONDecoder()
    i = text.find('{"type":"struct"')
    while i >= 0:
        try:
            value, end = dec.raw_decode(text, i)
        except ValueError:
            end = i + 1
        else:
            out.append(value)
        i = text.find('{"type":"struct"', end)
    return out
