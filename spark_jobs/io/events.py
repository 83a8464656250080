"""The parse that splits every landing line into a typed event of its kind
(:mod:`spark_jobs.io.event_kinds`) or a bad record with its reason.

Two tiers. The first reads every line's bytes with Jackson in the JVM (a Spark UDF,
``spark_jobs/io/jvm/statekeeper/ParseLine.java``, compiled at set-up): the kind's fields, and
whether the line is "suspect" (not UTF-8, malformed, not one object, a field of the wrong JSON
type, a timestamp not of the ISO shape). A few cheap checks of its fields then say "certainly
good" (required fields, the timestamp's cast, enums, an amount that fits, the line's length).
Only the lines not certainly good are parsed a second time, to a VARIANT, where each field's
JSON type is checked exactly and the reason named. The VARIANT check runs inside a ``CASE
WHEN`` branch, so good lines never pay for it.

Spark's own ``from_json`` was the first tier until it was measured: it builds a character
reader per line (about twice the cost of Spark's JSON file reader, which hands Jackson the bytes
as the UDF does), and it turns a number or an object given for a string field into its text,
which the parse then had to look for with a regex over every line's strings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spark_jobs.contract.spec import DEFAULT_MAX_FUTURE_SECONDS
from spark_jobs.io import batch_clock
from spark_jobs.io.event_kinds import (
    ACCEPTS,
    INT_MAX,
    INT_MIN,
    INT_TEXT,
    ISO_TS_WITH_ZONE,
    TYPE_WORDS,
    Field,
    fields,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession


def _q(text: str) -> str:
    """``text`` as a Spark SQL string literal (the parser unescapes backslashes and quotes)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _in(col: str, values: tuple[str, ...]) -> str:
    return f"{col} IN ({', '.join(_q(v) for v in values)})"


# The slow path's columns are written as SQL text, one ``F.expr`` per column: built with the
# Column API they cost about 430 py4j round trips per kind, a third of building a job's plan,
# for the very same expressions (the analysed plans were the same result for every kind).
def _json_type(v: str, name: str) -> str:
    # NULL when the key is missing, "VOID" for a JSON null; DECIMAL(p,s) reduced to DECIMAL.
    return (
        f"substring_index(schema_of_variant(try_variant_get({v}, {_q('$.' + name)}, 'variant')),"
        " '(', 1)"
    )


def _types(v: str, kind: str, needed: str) -> list[Column]:
    """Per field of ``kind``, its JSON type in the VARIANT column ``v`` (see :func:`_json_type`)
    and, for timestamps and enums, its string value: columns ``_t_<field>`` and ``_s_<field>``;
    for numbers, whether they do not fit their column (:func:`_no_fit`): ``_f_<field>``.
    Computed once each, so the reason below stays small code (see :func:`parse_lines`), and
    only where ``needed`` (a boolean SQL expression): a projection computes every column it
    makes before the next one reads any, so the ``CASE`` of the reason would not spare the good
    lines these calls (they run on a NULL VARIANT too)."""
    from pyspark.sql import functions as F

    cols = [(f"_t_{f.name}", _json_type(v, f.name)) for f in fields(kind)]
    cols += [
        (f"_s_{f.name}", f"try_variant_get({v}, {_q('$.' + f.name)}, 'string')")
        for f in fields(kind)
        if f.type == "ts" or f.allowed
    ]
    cols += [(f"_f_{f.name}", _no_fit(v, f)) for f in fields(kind) if f.type in _NO_FIT]
    return [F.expr(f"CASE WHEN {needed} THEN {c} END").alias(name) for name, c in cols]


def _reason(v: str, kind: str) -> Column:
    """The first thing wrong with a line parsed to the VARIANT column ``v``, or NULL for a good
    event; reads the columns of :func:`_types`, and the first tier's ``_j``."""
    from pyspark.sql import functions as F

    checks: list[tuple[str, str]] = [
        (f"{v} IS NULL", _q("malformed JSON")),
        (f"NOT startswith(schema_of_variant({v}), 'OBJECT')", _q("not a JSON object")),
        # parse_json reads a line's first value: "{...}{...}" would lose the second in silence
        (f"_j.{AFTER}", _q("text after the JSON object")),
    ]
    for f in fields(kind):
        t = f"_t_{f.name}"
        absent = f"coalesce({t} = 'VOID', true)"
        if not f.nullable:
            checks.append((absent, _q(f"missing field {f.name}")))
        if f.type in _NO_FIT:
            checks.append((f"coalesce(_f_{f.name}, false)", _q(_NO_FIT[f.type](f))))
        given = _q(f"field {f.name} must be {TYPE_WORDS[f.type]}, got ")
        checks.append(
            (f"(NOT {absent}) AND (NOT {_in(t, ACCEPTS[f.type])})", f"concat({given}, lower({t}))")
        )
        if f.type == "ts":
            checks.append(
                (
                    f"(NOT {absent}) AND (NOT _s_{f.name} RLIKE {_q(ISO_TS_WITH_ZONE)})",
                    _q(f"field {f.name} must be an ISO-8601 timestamp with a timezone"),
                )
            )
        if f.allowed:
            checks.append(
                (
                    f"(NOT {absent}) AND (NOT {_in(f'_s_{f.name}', f.allowed)})",
                    _q(f"field {f.name} must be one of {', '.join(f.allowed)}"),
                )
            )
    return F.expr("CASE " + " ".join(f"WHEN {c} THEN {m}" for c, m in checks) + " END")


_NO_FIT = {
    "int": lambda f: f"field {f.name} does not fit a 32-bit integer ({INT_MIN}..{INT_MAX})",
    "num": lambda f: f"field {f.name} does not fit {f.spark_type}",
}


def _no_fit(v: str, f: Field) -> str:
    """True for a number of the right JSON type that its column cannot hold: an integer outside
    32 bits (one past a long is a DECIMAL in the VARIANT), an amount outside decimal(18,2) (1e400
    is an infinite DOUBLE). The typed projection never casts with ANSI errors, so such a line is
    a bad record, never fatal."""
    t, at = _json_type(v, f.name), _q("$." + f.name)
    if f.type == "int":
        whole = f"try_variant_get({v}, {at}, 'string') RLIKE {_q(INT_TEXT)}"
        integral = f"({_in(t, (*ACCEPTS['int'], 'DECIMAL'))}) AND ({whole})"
        return f"({integral}) AND (try_variant_get({v}, {at}, 'int') IS NULL)"
    return (
        f"({_in(t, ACCEPTS['num'])}) AND "
        f"(try_cast(try_variant_get({v}, {at}, 'double') AS {f.spark_type}) IS NULL)"
    )


# Lines longer than this are quarantined unparsed, with their first RAW_KEPT characters: a
# 50 MB "event" is a broken producer, and parsing or storing it whole costs every reader.
MAX_LINE_BYTES = 1024 * 1024
RAW_KEPT = 4096
SUSPECT = "_suspect"
AFTER = "_after"  # the first tier saw more than blanks after the line's object
# The first tier's field codes (spark_jobs/io/jvm/statekeeper/ParseLine.java): a string, a
# string of the ISO timestamp shape, an integer (returned as a long, which always holds a 32-bit
# value), a number (a double, cast to the field's decimal below).
_CODES = {"str": "s", "ts": "t", "int": "i", "num": "n"}
_RETURNS = {"str": "string", "ts": "string", "int": "bigint", "num": "double"}


def _first_tier(spark: SparkSession, kind: str) -> tuple[str, str]:
    """The first tier's function for ``kind``, registered in ``spark`` (a temporary function;
    registering it again is harmless): its name and the fields argument it takes (the ISO
    shape's expression is its third)."""
    from spark_jobs.contract.jvm import PARSER_CLASS

    name = "statekeeper_parse_" + kind.replace("-", "_")
    typed = [f"{f.name} {_RETURNS[f.type]}" for f in fields(kind)]
    returns = ", ".join([*typed, f"{SUSPECT} boolean", f"{AFTER} boolean"])
    spark.udf.registerJavaFunction(name, PARSER_CLASS, returns)
    return name, ",".join(f"{_CODES[f.type]}:{f.name}" for f in fields(kind))


def _certainly_good(j: Column, value: Column, kind: str) -> Column:
    """True for a line that passes every check of :func:`_reason` and :func:`_time_reason`;
    False for one that may not. Reads the typed columns of :func:`parse_lines` (a timestamp field
    is cast once, there). The clock is checked later (:mod:`~spark_jobs.io.batch_clock`)."""
    from pyspark.sql import functions as F

    # Not suspect: UTF-8, one JSON object, every field of its JSON type, timestamps ISO-shaped.
    ok = (F.octet_length(value) <= MAX_LINE_BYTES) & ~j[SUSPECT]
    for f in fields(kind):
        c = j[f.name]
        if not f.nullable:
            ok = ok & c.isNotNull()
        if f.type == "num":  # a number too large for its decimal (1e400 is an infinite double)
            ok = ok & (c.isNull() | F.col(f.name).isNotNull())
        if f.type == "ts":
            ok = ok & F.col(f.name).isNotNull()  # a real instant
        if f.allowed:
            ok = ok & c.isin(*f.allowed)
    return F.coalesce(ok, F.lit(False))


def _time_reason(j: Column, kind: str) -> Column:
    """The timestamp check that needs more than the JSON: a real instant (not too far ahead is
    :mod:`~spark_jobs.io.batch_clock`'s)."""
    from pyspark.sql import functions as F

    expr = F.lit(None).cast("string")
    for f in reversed([f for f in fields(kind) if f.type == "ts"]):
        t = F.try_to_timestamp(j[f.name])
        expr = F.when(t.isNull(), F.lit(f"field {f.name} is not a real instant")).otherwise(expr)
    return expr


def _slow_reason(j: Column, v: str, value: Column, kind: str) -> Column:
    """The exact reason of a line that is not certainly good (NULL: it is good after all);
    ``v`` is the column of the line parsed to a VARIANT."""
    from pyspark.sql import functions as F

    return (
        F.when(
            F.octet_length(value) > MAX_LINE_BYTES,
            F.lit(f"line longer than {MAX_LINE_BYTES} bytes (first {RAW_KEPT} characters kept)"),
        )
        .when(~F.is_valid_utf8(value), F.lit("line is not valid UTF-8"))
        .otherwise(F.coalesce(_reason(v, kind), _time_reason(j, kind)))
    )


def parse_lines(
    lines: DataFrame,
    kind: str,
    max_future_seconds: float = DEFAULT_MAX_FUTURE_SECONDS,
    admitted_ms: int | None = None,
    clock_floor_ms: int | None = None,
) -> DataFrame:
    """``lines`` (``value``, ``source_file``) -> the typed fields plus ``_reason``, ``_raw``,
    ``_source_file`` and ``_quarantined_at`` (the last three set for bad lines only; a bad
    line's timestamps are NULL). Blank lines carry no event and are skipped.

    "The clock" of ``max_future`` is ``current_timestamp()``: in a streaming query, the batch's
    timestamp kept in the offset log, so a replayed batch judges its lines the same way; it is
    read past the parse's own stage (:mod:`~spark_jobs.io.batch_clock`). The limit is never
    below ``admitted_ms``, which the runner reads from the checkpoint when the run starts: the
    newest batch's watermark plus its delay. A replay decides alike with it too: the batches
    between a run's start and a batch admit nothing past that batch's own ``clock +
    max_future``, so a later start moves the limit only below it. ``clock_floor_ms``: the
    earliest clock of a batch the query will run (default now; see ``may_be_ahead`` there).

    Six projections, kept apart on purpose (Spark does not merge a projection into one that
    uses its expensive columns more than once): the first tier; the typed fields; the
    "certainly good" flag, from them (all whole-stage code generated); the VARIANT, and each
    field's JSON type in it, computed only for the lines not certainly good; the reason; then,
    past the clock's boundary, the clock's verdict and what a bad line keeps.

    The generated code of these steps is one Java method, and the JVM does not compile a method
    over 8,000 bytes of bytecode: it interprets it, for every line. Inlining each field's type
    check at every use once made it 21 KB and the whole parse 5x slower;
    ``tests/integration/test_parse_and_readers.py`` keeps every kind under the limit.
    """
    from pyspark.sql import functions as F

    value, j, fast = F.col("value"), F.col("_j"), F.col("_fast")
    parse, codes = _first_tier(lines.sparkSession, kind)
    native = lines.where(F.trim(value) != "").select(
        value,
        F.col("source_file"),
        # A huge line is not parsed at all: its reason needs only its length.
        F.call_function(
            parse,
            F.when(F.octet_length(value) <= MAX_LINE_BYTES, value.cast("binary")),
            F.lit(codes),
            F.lit(ISO_TS_WITH_ZONE),
        ).alias("_j"),
    )
    typed = []
    for f in fields(kind):
        c = j[f.name]
        if f.type == "ts":
            c = F.try_to_timestamp(c)
        elif f.type == "num":
            c = c.try_cast(f.spark_type)  # an amount that does not fit is a bad line, not fatal
        typed.append(c.alias(f.name))
    names = [f.name for f in fields(kind)]
    # The "certainly good" flag reads the typed columns of the projection before, so a
    # timestamp is cast once per line (Spark does not share a cast inside an AND chain).
    checked = native.select(*typed, value, "source_file", j).select(
        "*", _certainly_good(j, value, kind).alias("_fast")
    )
    variant = checked.select("*", F.when(~fast, F.try_parse_json(value)).alias("_v"))
    variant = variant.select("*", *_types("_v", kind, "NOT _fast"))
    reason = F.when(fast, F.lit(None)).otherwise(_slow_reason(j, "_v", value, kind))
    long = F.octet_length(value) > MAX_LINE_BYTES
    raw = F.when(long, F.left(value, F.lit(RAW_KEPT))).otherwise(value)
    # The line and its file go on for a bad line and one the clock may still find ahead (copying
    # every line's text to the next stage cost 3 % of a catch-up run); only the bad ones' then
    # cross the shuffle (:func:`shared`).
    keep = F.col("_reason").isNotNull() | batch_clock.may_be_ahead(
        kind, max_future_seconds, admitted_ms, clock_floor_ms
    )
    checked = variant.select(*names, reason.cast("string").alias("_reason"), value, "source_file")
    checked = checked.select(
        *names,
        "_reason",
        F.when(keep, value).alias(batch_clock.VALUE),
        F.when(keep, F.col("source_file")).alias(batch_clock.SOURCE_FILE),
    )
    return batch_clock.judged(checked, kind, raw, max_future_seconds, admitted_ms)


def shared(parsed: DataFrame, partitions: int, keys: list[Column] | None = None) -> DataFrame:
    """``parsed`` hash-partitioned on ``keys`` (default: every event field) into ``partitions``:
    the one shuffle that both :func:`good_events` and :func:`bad_records` read, so each line is
    scanned and parsed once per batch (Spark's ReuseExchange serves the second reader).

    ``keys`` are what the job's stateful operator groups the kind's events by, and
    ``partitions`` its state's partitions: the operator then finds its input already
    distributed and adds no shuffle of its own (a mismatch only costs a second shuffle)."""
    from pyspark.sql import functions as F

    names = [c for c in parsed.columns if not c.startswith("_")]
    return parsed.repartition(partitions, *(keys or [F.col(n) for n in names]))


def _side(parsed: DataFrame, cond: Column) -> DataFrame:
    """The rows of ``parsed`` meeting ``cond``, kept *above* the shuffle of :func:`shared`.

    A plain filter, and the columns each side reads, would be pushed below the shuffle by the
    optimizer, giving two different shuffles and so two scans and parses. One nondeterministic
    condition naming every column can be neither pushed down nor pruned: both sides read the
    very same shuffle. (Its ``otherwise`` is never evaluated: partition ids are >= 0.)"""
    from pyspark.sql import functions as F

    every = F.hash(*[F.col(c) for c in parsed.columns]) == 0
    return parsed.where(F.when(F.spark_partition_id() >= 0, cond).otherwise(every))


def good_events(parsed: DataFrame, kind: str, keys: tuple[str, ...] = ()) -> DataFrame:
    """The good lines' events, with the added key ``keys`` (a hash bucket) they were shuffled on."""
    from pyspark.sql import functions as F

    return _side(parsed, F.col("_reason").isNull()).select(*[f.name for f in fields(kind)], *keys)


def bad_records(parsed: DataFrame, job: str, kind: str) -> DataFrame:
    """Bad lines as quarantine rows: raw line, reason, source file, time quarantined."""
    from pyspark.sql import functions as F

    return _side(parsed, F.col("_reason").isNotNull()).select(
        F.col("_raw").alias("raw_line"),
        F.col("_reason").alias("reason"),
        F.col("_source_file").alias("source_file"),
        F.col("_quarantined_at").alias("quarantined_at"),
        F.lit(job).alias("job"),
        F.lit(kind).alias("kind"),
    )
