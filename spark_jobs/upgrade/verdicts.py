"""One verdict per difference between a checkpoint (and its table) and the job as declared now.
Pure: :class:`Facts` in, :class:`Change` list out (unit-tested on synthetic inputs).

The verdicts, mildest first (the worst one sets ``upgrade plan``'s exit code):

- ``compatible``: takes effect for new events; ``upgrade migrate`` records it and nothing else;
- ``repartition``: ``checkpoint repartition`` rescales the state first;
- ``migrate``: the state (or table) must be rewritten by a rule, named in the change;
- ``incompatible``: the state cannot be derived from what is stored: the input that built it
  would have to be replayed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from spark_jobs.contract.errors import ExitCode
from spark_jobs.upgrade import schemas
from spark_jobs.upgrade.facts import Facts, Recorded

COMPATIBLE, REPARTITION, MIGRATE, INCOMPATIBLE = (
    "compatible",
    "repartition",
    "migrate",
    "incompatible",
)
VERDICTS = (COMPATIBLE, REPARTITION, MIGRATE, INCOMPATIBLE)
EXIT_CODES = {
    COMPATIBLE: ExitCode.UPGRADE_COMPATIBLE,
    REPARTITION: ExitCode.UPGRADE_REPARTITION,
    MIGRATE: ExitCode.UPGRADE_MIGRATE,
    INCOMPATIBLE: ExitCode.UPGRADE_INCOMPATIBLE,
}

# Parameters the stored state is shaped by; every other parameter is read by the logic only.
STATE_PARAMS = {
    "buckets": (
        MIGRATE,
        "the batched executor hashes keys into this many state rows: every key's state moves "
        "to its bucket under the new count (rule: regroup each bucket's keys by "
        "pmod(xxhash64(key), {after}))",
    ),
    "window": (
        INCOMPATIBLE,
        "open windows are stored per window start and length; counts of a {before} window "
        "cannot be split into {after} windows: the events of the open windows would be replayed",
    ),
}
# What a compatible parameter change means for keys already in state, where more can be said
# than the general rule.
PARAM_NOTES = {
    ("fraud_alerts", "threshold"): (
        "an open failure run alerts at its next counted failure once that makes {after} or "
        "more (a run already past {after} alerts then, with its count as failed_attempts); "
        "alerts already written stay"
    ),
}


@dataclass(frozen=True)
class Change:
    field: str  # "params.threshold", "state_store", "state.key", "output.ips", ...
    before: Any
    after: Any
    verdict: str
    means: str  # what happens to rows already in state, and how to get there
    replay: list[dict[str, Any]] | None = None  # incompatible: the input a replay needs

    def line(self) -> str:
        return f"{self.verdict:<12} {self.field}: {self.before!r} -> {self.after!r}: {self.means}"

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


def compare(rec: Recorded, now: Facts, job: str) -> list[Change]:
    """Every difference between what ``rec`` holds and what ``now`` declares."""
    # an executor change regroups Spark's state rows (its own migrate verdict): their schemas
    # then differ by design, the job's state as declared does not
    same_rows = rec.fingerprint.get("executor") == now.fingerprint.get("executor")
    out = _fingerprint(rec, now, job) + _key(rec, now) + _state(rec, now, same_rows)
    out += _output(rec, now)
    return out


def worst(changes: list[Change]) -> str | None:
    return max((c.verdict for c in changes), key=VERDICTS.index, default=None)


def exit_code(changes: list[Change]) -> int:
    w = worst(changes)
    return int(EXIT_CODES[w]) if w else int(ExitCode.OK)


def _fingerprint(rec: Recorded, now: Facts, job: str) -> list[Change]:
    before, after = rec.fingerprint, now.fingerprint
    out: list[Change] = []
    for k in sorted(set(before) | set(after)):
        b, a = before.get(k), after.get(k)
        if b == a or k == "job":
            continue
        if k == "params":
            out += _params(b or {}, a or {}, job)
        else:
            out.append(_setting(k, b, a, rec, job))
    return out


def _params(before: dict[str, Any], after: dict[str, Any], job: str) -> list[Change]:
    from spark_jobs.contract.binding import changes
    from spark_jobs.jobs import definition

    out = []
    # The very comparison run's check makes (as the job reads them: a default written out or
    # left out, 30 minutes or 1800s are no change), so plan names a change iff run refuses it.
    same = definition(job).comparable_params
    for field, b, a in changes({"params": before}, {"params": after}, same):
        name = field.removeprefix("params.")
        verdict, means = STATE_PARAMS.get(name, (COMPATIBLE, ""))
        if verdict == COMPATIBLE:
            means = PARAM_NOTES.get((job, name), "") or (
                "keys already in state keep what they hold and meet the new value at their "
                "next event"
            )
            means = "takes effect for events processed from the next batch on; " + means
        out.append(Change(f"params.{name}", b, a, verdict, means.format(before=b, after=a)))
    return out


def _setting(k: str, b: Any, a: Any, rec: Recorded, job: str) -> Change:
    """A spec setting or declaration fact the binding records (spark_jobs.contract.binding)."""
    if k == "shuffle_partitions":
        return Change(
            k,
            b,
            a,
            REPARTITION,
            f"Spark pinned {b} state partitions in the offset log; run python -m spark_jobs "
            f"checkpoint repartition {job} --partitions {a} (RocksDB state only; snapshot first, "
            "keys keep their state)",
        )
    if k == "state_store":
        return Change(
            k,
            b,
            a,
            MIGRATE,
            f"Spark refuses another state store provider on an existing checkpoint; every "
            f"key's state must be copied from the {b} store into a new {a} store at the last "
            "committed batch (rule: same rows, new files)",
        )
    if k == "watermark_seconds":
        return Change(
            k,
            b,
            a,
            MIGRATE,
            f"the offset log carries the watermark computed with the {b:g}s delay and held events "
            f"and timers were judged by it; the watermark must be recomputed as the newest event "
            f"time seen minus {a:g}s before new input, so no open key is expired or admitted by the "
            "old delay",
        )
    if k == "executor":
        return Change(
            k,
            b,
            a,
            MIGRATE,
            "the per-key executor keeps one state row per key, the batched one a row per hash "
            "bucket holding many keys: every key's state must be regrouped (rule: same per-key "
            "state, new rows)",
        )
    if k in ("state_format", "time_mode"):
        return Change(
            k,
            b,
            a,
            MIGRATE,
            f"state written as {k}={b!r} is not readable as {a!r}: every key's state must be "
            "rewritten by a rule from the old layout to the new",
        )
    # inputs, output mode, pattern, and anything the binding records that has no rule here
    return Change(
        k,
        b,
        a,
        INCOMPATIBLE,
        f"Spark and the stored state were built for {k}={b!r}; the state for {a!r} can only be "
        f"built from the input: replay into a new checkpoint and table: {_replay_text(rec)}",
        rec.inputs or None,
    )


def _replay_text(rec: Recorded) -> str:
    """What a replay would read, and whether it is all still there, in words."""
    parts = []
    for i in rec.inputs:
        if i["kind"] == "files":
            gone = i["files_read"] - i["still_there"]
            parts.append(
                f"the {i['files_read']} file(s) the checkpoint read from {i['from']} "
                + ("(all still there)" if not gone else f"({gone} gone: {', '.join(i['gone'])})")
            )
        else:
            held = (
                f"(not known: {i['unknown_because']})"
                if i["complete"] is None
                else "(all still held)"
                if i["complete"]
                else f"(gone from partitions {i['lost']}: the topic's oldest offsets now)"
            )
            parts.append(f"{i['from']} offsets {i['start']} to {i['end']} {held}")
    return "; ".join(parts) or "the job's input from its first batch"


def _key(rec: Recorded, now: Facts) -> list[Change]:
    out = []
    if rec.state_key is not None and now.state_key is not None and rec.state_key != now.state_key:
        out.append(
            Change(
                "state.key",
                rec.state_key,
                now.state_key,
                INCOMPATIBLE,
                f"state is kept per ({', '.join(rec.state_key)}); state per "
                f"({', '.join(now.state_key)}) cannot be derived from it (what it adds is not in "
                f"state): replay from batch 0 into a new checkpoint and table: {_replay_text(rec)}",
                rec.inputs or None,
            )
        )
    return out


def _state(rec: Recorded, now: Facts, same_rows: bool) -> list[Change]:
    """The state's fields: as the binding recorded the declaration when it did (what the job
    means by its state, also inside the batched executor's blobs), else as Spark stored them."""
    if rec.state_schema is not None and now.state_schema is not None:
        old_s, new_s = rec.state_schema, now.state_schema
        if isinstance(old_s, str) and isinstance(new_s, str):
            declared = _fields(dict(schemas.ddl(old_s)), dict(schemas.ddl(new_s)), "state.")
            # the same state kept in another row (the batched executor's bucket layout of an
            # earlier release): Spark's stored row says so
            return declared or _stored_rows(rec, now, same_rows)
        old_v = old_s if isinstance(old_s, dict) else {}
        new_v = new_s if isinstance(new_s, dict) else {}
        out = []
        for var in sorted(set(old_v) | set(new_v)):  # transformWithState: per state variable
            if var not in old_v or var not in new_v:
                out.append(
                    Change(
                        f"state.{var}",
                        old_v.get(var),
                        new_v.get(var),
                        MIGRATE,
                        f"state variable {var} is {'added' if var in new_v else 'removed'}: "
                        "every key's state gets it from the rule, or loses it",
                    )
                )
            else:
                out += _fields(
                    dict(schemas.ddl(old_v[var])), dict(schemas.ddl(new_v[var])), f"state.{var}."
                )
        return out
    return _stored_rows(rec, now, same_rows)


def _stored_rows(rec: Recorded, now: Facts, same_rows: bool) -> list[Change]:
    """The state row Spark stored against the one the job now stores."""
    if rec.state_value is None or now.state_value is None or not same_rows:
        return []
    return _fields(dict(rec.state_value), dict(now.state_value), "state.")


def _fields(old: dict[str, str], new: dict[str, str], prefix: str) -> list[Change]:
    out: list[Change] = []
    for name in [n for n in new if n not in old]:
        out.append(
            Change(
                f"{prefix}{name}",
                None,
                new[name],
                MIGRATE,
                f"added to the state row: every key in state gets {name} ({new[name]}) from the "
                "rule (a default, or a function of its old row)",
            )
        )
    for name in [n for n in old if n not in new]:
        out.append(
            Change(
                f"{prefix}{name}",
                old[name],
                None,
                MIGRATE,
                f"removed from the state row: every key's {name} is dropped",
            )
        )
    for name in [n for n in new if n in old and old[n] != new[n]]:
        out.append(
            Change(
                f"{prefix}{name}",
                old[name],
                new[name],
                MIGRATE,
                f"every key's {name} must be converted from {old[name]} to {new[name]} by a rule",
            )
        )
    return out


def _output(rec: Recorded, now: Facts) -> list[Change]:
    if rec.output is None or now.output is None:
        return []  # no table yet: the first write creates it as declared
    old, new = dict(rec.output), dict(now.output)
    out = []
    for name in [n for n in new if n not in old]:
        out.append(
            Change(
                f"output.{name}",
                None,
                new[name],
                MIGRATE,
                f"the table {rec.table} gains column {name} {new[name]} (ALTER TABLE ADD "
                "COLUMNS before the next run); rows already written hold null in it",
            )
        )
    for name in [n for n in old if n not in new and f"output.{n}" not in rec.dropped]:
        out.append(
            Change(
                f"output.{name}",
                old[name],
                None,
                COMPATIBLE,
                f"new rows hold null in {name}; rows already written keep theirs",
            )
        )
    for name in [n for n in new if n in old and old[n] != new[n]]:
        out.append(
            Change(
                f"output.{name}",
                old[name],
                new[name],
                INCOMPATIBLE,
                f"rows already written hold {name} as {old[name]}; the table cannot take "
                f"{new[name]} rows: rebuild it from the input: {_replay_text(rec)}",
                rec.inputs or None,
            )
        )
    return out
