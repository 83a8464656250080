"""Freshness alerts: the check that turns the spec's ``freshness`` limits into ONE alert per
breach and ONE "recovered" when it clears, and the notifiers it calls.

``notifiers`` is the one place alerts are configured: it returns Airflow notifiers (any
``BaseNotifier``: the SMTP provider's, Slack's ...), called with the task's context. The default
logs the alert at WARNING and appends it to ``<data>/alerts/freshness.jsonl`` (a record people and
tests can read). What was last said per job is kept in an Airflow Variable
(``statekeeper.freshness.JOB``), so a breach that lasts many checks is announced once.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.bases.notifier import BaseNotifier

from spark_jobs.contract import paths
from statekeeper import freshness

VARIABLE = "statekeeper.freshness.{job}"


class FreshnessNotifier(BaseNotifier):
    """Logs a freshness alert or recovery and appends it to ``<data>/alerts/freshness.jsonl``."""

    template_fields = ("message",)

    def __init__(self, *, job: str, action: str, message: str) -> None:
        super().__init__()
        self.job = job
        self.action = action
        self.message = message

    def notify(self, context: Any) -> None:
        self.log.warning("freshness %s: %s: %s", self.action, self.job, self.message)
        log = paths.data_dir() / "alerts" / "freshness.jsonl"
        log.parent.mkdir(parents=True, exist_ok=True)
        line = {
            "job": self.job,
            "action": self.action,
            "message": self.message,
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(line) + "\n")


def notifiers(job: str, action: str, message: str) -> list[BaseNotifier]:
    """The notifiers a freshness alert or recovery goes to (configure deployments here)."""
    return [FreshnessNotifier(job=job, action=action, message=message)]


class FreshnessCheckOperator(BaseOperator):
    """Check every job with ``freshness`` limits; alert on a new breach, say when it cleared.
    The run's ``jobs`` param (a list) narrows the jobs checked."""

    def execute(self, context: Any) -> dict[str, Any]:
        from airflow.sdk import Variable

        from statekeeper import health_report

        wanted = set((context.get("params") or {}).get("jobs") or []) or None
        now = time.time()
        out: dict[str, Any] = {}
        for spec in health_report.specs():
            f = spec.freshness
            if f.max_watermark_lag is None and f.max_input_lag is None:
                continue
            if wanted is not None and spec.name not in wanted:
                continue
            row = health_report.job_row(spec, now)
            reasons = freshness.breaches(spec, row)
            key = VARIABLE.format(job=spec.name)
            prev = freshness.AlertState.from_json(Variable.get(key, default=None))
            state, action = freshness.step(prev, reasons, now)
            if action is not None:
                message = "; ".join(reasons) if reasons else "back within its freshness limits"
                for notifier in notifiers(spec.name, action, message):
                    notifier(context)
                Variable.set(key, state.to_json())
            out[spec.name] = {"state": state.state, "action": action, "reasons": reasons}
        return out
