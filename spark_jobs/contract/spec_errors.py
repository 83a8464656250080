"""A spec file's validation error as the one line a user reads: the file, the key (``params``,
``quality.freshness_sla``) and what it must be. Keys a user gets wrong often have their own words;
the rest use pydantic's."""

from __future__ import annotations

from typing import Any, get_args

from pydantic import BaseModel, ValidationError

from spark_jobs.contract.blocks import Freshness, Quality, Snapshots, Supervise, Tables

# What a bad value of these keys must be, in the one line (the rest: pydantic's own words).
_NEEDS = {
    "inputs": "map an input kind to a folder",
    "watermark": "be a duration such as 30s or 10 minutes, at most 100 years",
    "max_future": "be positive and at most 100 years",
    "kafka_options": "map consumer properties to values",
}
BLOCKS: dict[str, type[BaseModel]] = {
    "quality": Quality,
    "snapshots": Snapshots,
    "supervise": Supervise,
    "tables": Tables,
    "freshness": Freshness,
}


def one_line(exc: ValidationError, model: type[BaseModel], raw: dict[str, Any], where: str) -> str:
    """The first error of ``exc`` (``model`` validating spec file ``where``'s mapping ``raw``)
    as one line naming the spec file and the key."""
    err = exc.errors(include_url=False)[0]
    loc = [str(p) for p in err["loc"]]
    key = loc[0] if loc else ""
    kind = err["type"]
    if kind == "extra_forbidden" and len(loc) == 1:
        unknown = sorted(set(raw) - set(model.model_fields))
        return f"job spec {where}: unknown key(s) {', '.join(unknown)}"
    if kind == "missing" and len(loc) == 1:
        return f"job spec {where}: missing required key {key!r}"
    if key in BLOCKS:
        return _block_line(BLOCKS[key], key, loc[1:], err, where)
    if kind == "literal_error":
        allowed = ", ".join(get_args(model.model_fields[key].annotation))
        return f"job spec {where}: {key} must be one of {allowed}, not {err['input']!r}"
    if key in _NEEDS:
        return f"job spec {where}: {key} must {_NEEDS[key]}"
    return f"job spec {where}: {'.'.join(loc)} {err['msg'][0].lower()}{err['msg'][1:]}, not {err['input']!r}"


def _block_line(model: Any, block: str, loc: list[str], err: Any, where: str) -> str:
    """The line of an error inside a block (``quality.freshness_sla``)."""
    if not loc:
        return f"job spec {where}: {block} must be a mapping, not {err['input']!r}"
    key = loc[0]
    if err["type"] == "extra_forbidden":
        known = ", ".join(model.model_fields)
        return f"job spec {where}: unknown key {block}.{key}; {block} takes {known}"
    info = model.model_fields.get(key)
    need = info.description if info is not None and info.description else err["msg"]
    return f"job spec {where}: {block}.{key} must be {need}, not {err['input']!r}"
