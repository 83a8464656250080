"""What a quality run found: one row per check, the batches it validated, and the verdict."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from spark_jobs.contract.errors import ExitCode
from spark_jobs.quality import results


@dataclass
class QualityResult:
    """What a quality run found. ``exit_code``: 0 pass (warnings allowed), 1 a ``fail`` finding."""

    job: str
    table: str
    run_id: str
    run_time: datetime
    rows: list[results.ResultRow] = field(default_factory=list)
    batches: list[dict[str, Any]] = field(default_factory=list)
    docs: str | None = None
    results_table: str = ""
    note: str = ""
    seconds: float = 0.0
    engine: str = ""

    def add_note(self, text: str) -> None:
        """Add ``text`` to the run's note (notes are joined with ``; ``)."""
        self.note = f"{self.note}; {text}" if self.note else text

    @property
    def failures(self) -> list[results.ResultRow]:
        return [r for r in self.rows if r.status == "fail"]

    @property
    def warnings(self) -> list[results.ResultRow]:
        return [r for r in self.rows if r.status == "warn"]

    @property
    def status(self) -> str:
        if not self.rows:
            return "up to date"
        return "fail" if self.failures else "warn" if self.warnings else "pass"

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.QUALITY_FAILED if self.failures else ExitCode.OK

    def to_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "table": self.table,
            "run_id": self.run_id,
            "run_time": self.run_time.isoformat(),
            "status": self.status,
            "exit_code": self.exit_code,
            "batches": self.batches,
            "docs": self.docs,
            "results_table": self.results_table,
            "note": self.note,
            "seconds": self.seconds,
            "engine": self.engine,
            "results": [r.to_dict() for r in self.rows],
        }

    def summary(self) -> str:
        """The CLI's short table."""
        lines = [f"quality {self.job}  {self.table}"]
        for b in self.batches:
            lines.append(
                f"  {b['suite']:<26} versions {b['versions']:<9} {b['mode']:<15} rows {b['rows']}"
            )
        if self.rows:
            lines.append(
                f"  {'SEVERITY':<8} {'STATUS':<6} {'CHECK':<46} {'OBSERVED':<28} UNEXPECTED"
            )
            for r in self.rows:
                unexpected = "" if r.unexpected_count is None else str(r.unexpected_count)
                lines.append(
                    f"  {r.severity:<8} {r.status.upper() if r.status != 'pass' else 'pass':<6} "
                    f"{r.check[:46]:<46} {r.observed[:28]:<28} {unexpected}"
                )
        counts = f"{len(self.failures)} fail, {len(self.warnings)} warn, {len(self.rows)} checks"
        engine = f" on {self.engine}" if self.engine else ""
        lines.append(f"result: {self.status.upper()} ({counts}) in {self.seconds:.1f}s{engine}")
        if self.note:
            lines.append(f"note: {self.note}")
        if self.rows:
            lines.append(f"results: {self.results_table}")
            lines.append(f"docs: {self.docs}")
        return "\n".join(lines)
