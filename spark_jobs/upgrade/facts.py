"""What a plan compares: the same facts, read from a checkpoint and its table
(:mod:`.recorded`) or from the job as declared now (:mod:`.declared`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from spark_jobs.upgrade.schemas import Fields


@dataclass
class Facts:
    # The checkpoint binding's fingerprint: spec settings and declaration facts Spark or the
    # stored state depend on (spark_jobs.contract.binding)
    fingerprint: dict[str, Any] = field(default_factory=dict)
    state_key: list[str] | None = None  # the columns Spark keeps state per; None: unknown
    state_value: Fields | None = None  # the job's own state row; None: Spark's own or unknown
    # The state as the job declares it (JobDef.state_schema: a DDL, or state variable -> DDL),
    # as the binding recorded it or as declared now; None: not recorded
    state_schema: str | dict[str, str] | None = None
    output: Fields | None = None  # the output table's columns; None: no table yet


@dataclass
class Recorded(Facts):
    """The live side, with where it came from (for the messages)."""

    checkpoint: str = ""
    table: str = ""
    last_committed: int | None = None
    operators: list[str] = field(default_factory=list)
    inputs: list[dict[str, Any]] = field(default_factory=list)  # what replaying would read
    # Output columns an earlier ``upgrade migrate`` accepted dropping: the table keeps them
    # (rows written before hold values), so they differ for ever and are not a change again.
    dropped: set[str] = field(default_factory=set)
