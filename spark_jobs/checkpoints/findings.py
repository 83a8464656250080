"""The findings ``checkpoint validate`` can report: each code's severity and one-line fix, and
the report that collects them (its exit code: 0 clean, 10 warnings, 20 errors).

The codes are stable: DAGs, runbooks and tests rely on them. The checks that raise them are in
:mod:`spark_jobs.checkpoints.validate`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from spark_jobs.contract.binding import GONE_FIX
from spark_jobs.contract.errors import ExitCode

ERROR, WARNING, INFO = "error", "warning", "info"

# code -> (severity, one-line fix). The codes are stable: DAGs, runbooks and tests rely on them.
CATALOGUE: dict[str, tuple[str, str]] = {
    "METADATA_MISSING": (
        ERROR,
        "restore the checkpoint from a snapshot (checkpoint restore); a new checkpoint on the same output table writes every row again (docs/checkpoints.md: a new checkpoint for an existing table)",
    ),
    "METADATA_UNREADABLE": (
        ERROR,
        "restore the checkpoint from a snapshot (checkpoint restore); a new checkpoint on the same output table writes every row again (docs/checkpoints.md: a new checkpoint for an existing table)",
    ),
    "OFFSET_GAP": (
        ERROR,
        "restore from a snapshot, or roll back to the last batch before the gap (checkpoint rollback --to-batch N)",
    ),
    "COMMIT_GAP": (
        WARNING,
        "harmless for restarts (Spark reads the newest commit); roll back below the gap before relying on older batches",
    ),
    "COMMIT_WITHOUT_OFFSET": (
        ERROR,
        "roll back to the newest batch that has both files (checkpoint rollback --to-batch N), or restore a snapshot",
    ),
    "UNCOMMITTED_MULTIPLE": (
        ERROR,
        "roll back to the last committed batch (checkpoint rollback --to-batch N) so Spark re-plans one batch",
    ),
    "TABLE_GONE": (ERROR, GONE_FIX),
    "UNCOMMITTED_BATCH": (INFO, "nothing to do: the next run re-runs that batch exactly once"),
    "FIRST_BATCH_CUT_SHORT": (
        INFO,
        "nothing to do: no batch is committed, so no state is needed; the next run moves it aside and runs batch 0 again, exactly once",
    ),
    "OFFSET_UNPARSABLE": (
        ERROR,
        "roll back below that batch (checkpoint rollback --to-batch N) or restore a snapshot",
    ),
    "COMMIT_UNPARSABLE": (
        ERROR,
        "roll back below that batch (checkpoint rollback --to-batch N) or restore a snapshot",
    ),
    "STATE_MISSING": (
        ERROR,
        "restore a snapshot that has the state (checkpoint restore), or roll back to a batch whose state is on disk",
    ),
    "STATE_PARTITIONS": (
        ERROR,
        "state partitions must equal the pinned shuffle partitions: restore a snapshot",
    ),
    "NOT_A_CHECKPOINT": (
        ERROR,
        "name the job's checkpoint folder (--checkpoint, or the catch-up DAG's checkpoint param); a new checkpoint goes in an empty or new folder",
    ),
    "TEMP_FILES": (
        WARNING,
        "delete the leftover temp files while no query runs; Spark never reads them",
    ),
    "CONF_SHUFFLE_PARTITIONS": (
        ERROR,
        "set shuffle_partitions back to the pinned value in the job spec, or move the state to the new count with python -m spark_jobs checkpoint repartition JOB --partitions N (upgrade plan JOB says what it does; docs/scale-out.md)",
    ),
    "CONF_STATE_STORE": (
        ERROR,
        "set state_store back to the pinned provider in the job spec, or move the state to the new store with python -m spark_jobs upgrade migrate JOB (upgrade plan JOB says what it does; docs/upgrades.md)",
    ),
    "RETAINED_FEWER": (
        WARNING,
        "the job ran with a lower spark.sql.streaming.minBatchesToRetain than the spec; check --conf overrides",
    ),
    "RETAINED_TOO_MANY": (
        WARNING,
        "old batches are not cleaned up: check spark.sql.streaming.minBatchesToRetain and that runs finish cleanly",
    ),
    "STATE_CLEANUP_LAGGING": (
        WARNING,
        "state maintenance is not running (short runs?): lower stateStore.maintenanceInterval or run longer",
    ),
    "RECOVERY_WINDOW_UNMET": (
        WARNING,
        "raise min_batches_to_retain, or snapshot more often / keep more snapshots (spec: snapshots)",
    ),
    "SNAPSHOT_STALE": (
        WARNING,
        "take a snapshot: python -m spark_jobs checkpoint snapshot --job JOB",
    ),
    "KAFKA_OFFSETS_UNREADABLE": (
        ERROR,
        "restore the checkpoint from a snapshot (checkpoint restore), or roll back to an earlier batch",
    ),
    "SOURCE_CHANGED": (
        ERROR,
        "point the job back at the input its checkpoint was written for, or start a new checkpoint",
    ),
    "LANDING_FILES_UNREAD": (
        WARNING,
        "run the job again (it reads every file whatever its modification time); a file still unread is not named *.json* or was removed from the source log",
    ),
    "LANDING_FILES_CHANGED": (
        WARNING,
        "land what was written to them after the read under a new name; write landing files under a hidden name (. or _) and rename them into place",
    ),
    "LANDING_FILES_READ_AS_NOTHING": (
        WARNING,
        "move the ones not read yet out of the landing folder (run refuses them), and land the lines of all of them uncompressed or as .json.gz, .json.bz2 or .json.zst under new names",
    ),
    "FILE_SOURCE_LOG_BLOAT": (
        WARNING,
        "fewer, larger input files (or the cleanSource option); the log grows with every file ever read",
    ),
}


@dataclass(frozen=True)
class Finding:
    code: str
    severity: str
    message: str
    fix: str

    def line(self) -> str:
        return f"{self.severity.upper():7} {self.code:24} {self.message} -- fix: {self.fix}"


@dataclass
class Report:
    checkpoint: str
    exists: bool
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == WARNING]

    @property
    def codes(self) -> list[str]:
        return [f.code for f in self.findings]

    @property
    def exit_code(self) -> ExitCode:
        if self.errors:
            return ExitCode.CHECKPOINT_ERRORS
        return ExitCode.CHECKPOINT_WARNINGS if self.warnings else ExitCode.OK

    def add(self, code: str, message: str) -> None:
        severity, fix = CATALOGUE[code]
        self.findings.append(Finding(code, severity, message, fix))

    def to_dict(self) -> dict[str, Any]:
        return {
            "checkpoint": self.checkpoint,
            "exists": self.exists,
            "status": "errors" if self.errors else "warnings" if self.warnings else "clean",
            "exit_code": self.exit_code,
            "findings": [asdict(f) for f in self.findings],
            "seconds": round(self.seconds, 4),
        }
