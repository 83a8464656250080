"""The health API and page show each job's last ``upgrade plan`` (its record under the
checkpoint's ``_statekeeper``, written by the plan command the DAGs run before every submit):
the worst verdict and its line while something changed, nothing once the plan is clean."""

from __future__ import annotations

import time

import pytest

from bench.synthetic_progress import write_history
from spark_jobs.contract import upgrade_plan

pytestmark = pytest.mark.unit

LINE = (
    "compatible   params.threshold: 5 -> 3: takes effect for events processed from the next "
    "batch on; alerts already written stay"
)
STEP = "python -m spark_jobs upgrade migrate keyed accepts it (snapshot first)"


def _plan(worst: str | None, line: str = "", step: str = "") -> dict:
    changes = [{"field": "params.threshold", "verdict": worst}] if worst else []
    code = {None: 0, "compatible": 30, "incompatible": 33}[worst]
    return {"job": "keyed", "changes": changes, "worst": worst, "exit_code": code,
            "worst_line": line or None, "next_step": step or None}  # fmt: skip


def test_the_last_plan_shows_its_worst_verdict_and_line_until_nothing_changed(
    tmp_path, monkeypatch
):
    from fastapi.testclient import TestClient

    from statekeeper.health_app import create_app

    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "keyed.yaml").write_text(
        f"name: keyed\ninputs: {{clickstream: {tmp_path}/landing}}\n"
        f"output: {tmp_path}/tables/keyed\ncheckpoint: {tmp_path}/checkpoints/keyed\n"
        "watermark: 10 minutes\n"
    )
    monkeypatch.setenv("STATEKEEPER_SPECS", str(specs))
    ck = str(tmp_path / "checkpoints" / "keyed")
    write_history(tmp_path / "checkpoints" / "keyed", "keyed", 10, time.time() - 60, seed=1)
    client = TestClient(create_app(auth=False))

    row = client.get("/api/health").json()[0]
    assert row["upgrade_verdict"] is None and row["upgrade_line"] is None  # never planned

    upgrade_plan.write(ck, _plan("compatible", LINE, STEP))
    row = client.get("/api/health").json()[0]
    assert row["upgrade_verdict"] == "compatible"
    assert row["upgrade_line"] == LINE and row["upgrade_next_step"] == STEP
    assert row["upgrade_planned_at"].endswith("Z")
    page = client.get("/").text
    assert 'data-field="upgrade_verdict"' in page and "params.threshold: 5 -&gt; 3" in page

    upgrade_plan.write(ck, _plan(None))  # migrated: the next plan finds nothing changed
    row = client.get("/api/health").json()[0]
    assert row["upgrade_verdict"] is None and row["upgrade_line"] is None
    assert row["upgrade_planned_at"] is not None
    assert 'data-field="upgrade_verdict"' not in client.get("/").text


def test_an_unreadable_record_reads_as_none(tmp_path):
    ck = str(tmp_path / "ck")
    assert upgrade_plan.read(ck) is None
    upgrade_plan.write(ck, _plan("incompatible", "incompatible state.key: ...", "replay"))
    last = upgrade_plan.read(ck)
    assert last is not None and last.worst == "incompatible" and last.exit_code == 33
    path = tmp_path / "ck" / "_statekeeper" / "plan.json"
    path.write_text("{not json")
    assert upgrade_plan.read(ck) is None
