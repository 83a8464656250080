"""How each key's stored state row becomes the new declaration's (``upgrade migrate``).

One rule per migration, chosen in this order:

1. the stored row already is the new one (a state store or watermark move): rows as they are;
2. ``--with MODULE:FUNCTION``: the user's function, old row -> new row, or None to drop the key;
3. a rule the job declares for that stored row (``JobDef.state_rules``: how an older release's
   state becomes this one's);
4. fields only added or removed: an added field takes the job's ``state_defaults`` value (else
   null), a removed one is dropped. A field whose type changed needs 2 or 3 (refused otherwise).

Functions see plain JSON values (numbers, text, lists, dicts; a binary field as bytes, a
timestamp as ISO text) and run on the executors; they are code the operator names on the command
line, never anything read from a checkpoint.
"""

from __future__ import annotations

import base64
import importlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from spark_jobs.contract.errors import UserError

STATE, TIMEOUT, JSON = "_state", "_timeout", "_state_json"


@dataclass(frozen=True)
class Rule:
    name: str  # what the report and the binding's history say was done
    kind: str  # "same" | "fields" | "python"
    defaults: dict[str, Any] = field(default_factory=dict)  # "fields": added fields' values
    function: str = ""  # "python": MODULE:FUNCTION, imported where it runs
    job: str = ""  # "python" with a job's declared rule: the job, and the rule's index
    index: int = -1

    def apply(self, old: Any, key_cols: list[str], state_ddl: str) -> Any:
        """``old`` (key columns, ``_state`` the stored row, ``_timeout``) with ``_state`` as the
        new row, null for a key the rule drops."""
        from pyspark.sql import functions as F

        new_type = struct_type(state_ddl)
        keep = [*[F.col(c) for c in key_cols], F.col(TIMEOUT)]
        if self.kind == "same":
            return old.select(*keep[:-1], F.col(STATE).cast(new_type).alias(STATE), keep[-1])
        if self.kind == "fields":
            have = set(old.schema[STATE].dataType.fieldNames())
            parts = [
                (F.col(f"{STATE}.{f.name}") if f.name in have else F.lit(self.defaults.get(f.name)))
                .cast(f.dataType)
                .alias(f.name)
                for f in new_type.fields
            ]
            return old.select(*keep[:-1], F.struct(*parts).alias(STATE), keep[-1])
        binary = [
            f.name for f in old.schema[STATE].dataType.fields if f.dataType.typeName() == "binary"
        ]
        as_json = old.select(*keep[:-1], F.to_json(F.col(STATE)).alias(STATE), keep[-1])
        out_schema = ", ".join(
            [
                *(f"`{c}` {old.schema[c].dataType.simpleString()}" for c in key_cols),
                f"{JSON} string",
                f"{TIMEOUT} long",
            ]
        )
        converted = as_json.mapInPandas(
            _converter(self.function, self.job, self.index, binary, key_cols), out_schema
        )
        return converted.select(
            *[F.col(c) for c in key_cols],
            F.from_json(F.col(JSON), new_type).alias(STATE),
            F.col(TIMEOUT),
        )


def _converter(
    function: str, job: str, index: int, binary: list[str], key_cols: list[str]
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    fn = load_function(function, ship=True) if function else _job_rule(job, index)
    label = f"--with {function}" if function else f"{job}'s rule {index}"

    def convert(frames: Iterator[Any]) -> Iterator[Any]:
        for frame in frames:
            out = []
            for i, text in enumerate(frame[STATE]):
                row = json.loads(text) if text is not None else None
                for name in binary:
                    if row is not None and row.get(name) is not None:
                        row[name] = base64.b64decode(row[name])
                try:
                    new = fn(row) if row is not None else None
                    # anything else would reach Spark as a null row: the key dropped in silence
                    if new is not None and not isinstance(new, dict):
                        raise TypeError(f"returned a {type(new).__name__}, not a dict or None")
                    out.append(None if new is None else json.dumps(new, default=_json_bytes))
                except Exception as exc:  # the user's code: whatever it raises, said in one line
                    key = tuple(frame[c].iloc[i] for c in key_cols)
                    raise RuleFailed(
                        f"{RULE_FAILED}{label} {type(exc).__name__}: {exc} (key {key})"
                    ) from None
            yield frame[[*key_cols, TIMEOUT]].assign(**{JSON: out})[[*key_cols, JSON, TIMEOUT]]

    return convert


# The first words of a rule's failure on an executor: Spark hands the driver the worker's whole
# traceback as text, in which :func:`failure` finds this line.
RULE_FAILED = "state rule failed: "


class RuleFailed(Exception):
    """A state rule raised, or returned something other than a row, for one key."""


def failure(exc: BaseException) -> str | None:
    """The rule's one-line failure inside a Spark error raised on the driver, else None."""
    for line in reversed(str(exc).splitlines()):
        _, found, why = line.partition(RULE_FAILED)
        if found:
            return why.strip()
    return None


def _json_bytes(value: Any) -> str:
    """A binary field of a new row, as Spark's JSON reader takes binary: base64."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    raise TypeError(f"a state row value of type {type(value).__name__} is not JSON")


def _job_rule(job: str, index: int) -> Callable[[dict[str, Any]], dict[str, Any] | None]:
    from spark_jobs.jobs import definition

    return definition(job).state_rules[index].convert


def load_function(
    spec: str, ship: bool = False
) -> Callable[[dict[str, Any]], dict[str, Any] | None]:
    """``MODULE:FUNCTION`` imported from ``sys.path``; a one-line UserError otherwise. ``ship``:
    the module's functions travel to the Python workers by value (it need not be installed
    there)."""
    module, sep, name = spec.partition(":")
    dotted = all(part.isidentifier() for part in module.split("."))
    if not sep or not dotted or not name.isidentifier():
        raise UserError(f"--with {spec!r}: write MODULE:FUNCTION, e.g. my_rules:add_pages")
    try:
        fn = getattr(importlib.import_module(module), name)
    # Importing runs the module: any error in it (a syntax error, a failing import) is the
    # module's, said in one line.
    except (ImportError, SyntaxError, ValueError, TypeError) as exc:
        raise UserError(f"--with {spec}: cannot import {module}: {exc}") from None
    except AttributeError:
        raise UserError(f"--with {spec}: module {module} has no {name}") from None
    if not callable(fn):
        raise UserError(f"--with {spec}: {name} is not a function")
    if ship:
        from pyspark import cloudpickle

        cloudpickle.register_pickle_by_value(importlib.import_module(module))
    return fn  # type: ignore[no-any-return]


def choose(stored: Any, state_ddl: str, job_def: Any, with_fn: str | None) -> Rule:
    """The rule for a stored row type (a Spark StructType) and the declared row."""
    new = struct_type(state_ddl)
    if with_fn:
        load_function(with_fn)  # refused here, before anything is written
        return Rule(f"--with {with_fn}", "python", function=with_fn)
    if _same(stored, new):
        return Rule("same rows", "same")
    for i, r in enumerate(job_def.state_rules):
        if _same(stored, struct_type(r.from_schema)):
            return Rule(
                f"{job_def.name}'s rule from {r.from_schema!r}", "python", job=job_def.name, index=i
            )
    old_types = {f.name: f.dataType for f in stored.fields}
    retyped = [
        f.name for f in new.fields if f.name in old_types and old_types[f.name] != f.dataType
    ]
    if retyped:
        f = retyped[0]
        raise UserError(
            f"upgrade migrate {job_def.name}: refused, nothing changed: state field {f} changes "
            f"type ({old_types[f].simpleString()} -> {new[f].dataType.simpleString()}); give "
            "--with MODULE:FUNCTION (old state row -> new row) to convert it"
        )
    defaults = dict(job_def.state_defaults)
    added = [f.name for f in new.fields if f.name not in old_types]
    dropped = [n for n in old_types if n not in new.fieldNames()]
    what = "; ".join(
        x
        for x in (
            f"added {', '.join(f'{n}={defaults.get(n)!r}' for n in added)}" if added else "",
            f"dropped {', '.join(dropped)}" if dropped else "",
        )
        if x
    )
    return Rule(f"fields: {what}", "fields", defaults={n: defaults.get(n) for n in added})


def struct_type(ddl: str) -> Any:
    """A DDL row as Spark's StructType."""
    from pyspark.sql.types import StructType

    return StructType.fromDDL(ddl)


def _same(a: Any, b: Any) -> bool:
    """Same field names and types, in order (nullability aside)."""
    return [(f.name, f.dataType.simpleString()) for f in a.fields] == [
        (f.name, f.dataType.simpleString()) for f in b.fields
    ]
