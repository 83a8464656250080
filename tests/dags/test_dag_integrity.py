"""Every DAG file imports cleanly and fast, with no connection/Variable lookups and no heavy
imports at parse time, and explains itself (doc, tags, owner, retries, described params)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from airflow_env import ROOT, airflow_env

pytestmark = pytest.mark.dags

# every catch-up and supervise DAG plans the upgrade before it submits (docs/upgrades.md)
CATCHUP_TASKS = [
    "catch_up",
    "publish_asset",
    "quality_check",
    "upgrade_plan",
    "validate_checkpoint",
]
SUPERVISE_TASKS = ["emit_completeness", "supervise", "upgrade_plan"]
HEAVY = ("pyspark", "pandas", "great_expectations", "py4j", "delta")

# Runs in a fresh interpreter: sys.modules then shows exactly what parsing imported.
PARSE = rf"""
import json, sys, time
from pathlib import Path
lookups = []
import airflow.sdk.execution_time.context as ctx
def _refuse(kind):
    def f(*a, **k):
        lookups.append(f"{{kind}} {{a[:1]}}")
        raise RuntimeError(f"{{kind}} lookup at parse time")
    return f
ctx._get_connection = _refuse("connection")
ctx._get_variable = _refuse("variable")
from airflow.dag_processing.dagbag import DagBag
out = {{"files": {{}}, "dags": {{}}}}
for f in sorted(Path(sys.argv[1]).glob("*.py")):
    t = time.perf_counter()
    bag = DagBag(dag_folder=str(f))
    out["files"][f.name] = {{"seconds": time.perf_counter() - t, "errors": {{k: str(v)[:500] for k, v in bag.import_errors.items()}}, "dag_ids": sorted(bag.dags)}}
    for dag_id, dag in bag.dags.items():
        out["dags"][dag_id] = {{
            "file": f.name,
            "doc_md": dag.doc_md or "",
            "tags": sorted(dag.tags),
            "owners": sorted({{t.owner for t in dag.tasks}}),
            "retries": sorted({{t.retries for t in dag.tasks}}),
            "schedule": str(dag.schedule),
            "max_active_runs": dag.max_active_runs,
            "params": {{k: (dag.params.get_param(k).description or "") for k in dag.params}},
            "tasks": sorted(t.task_id for t in dag.tasks),
        }}
out["modules"] = sorted(m for m in sys.modules if m.split(".")[0] in {HEAVY!r})
out["lookups"] = lookups
print("PARSED " + json.dumps(out))
"""


def _parse(home, **env: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", PARSE, str(ROOT / "dags")],
        env=airflow_env(home, AIRFLOW_CONN_SPARK_DEFAULT="", **env),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=str(ROOT),
    )
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("PARSED ")), None)
    assert line, f"parsing crashed:\n{proc.stderr[-3000:]}"
    return json.loads(line[len("PARSED ") :])


@pytest.fixture(scope="module")
def parsed(tmp_path_factory) -> dict:
    return _parse(tmp_path_factory.mktemp("airflow_home"))


def test_every_dag_file_imports_without_errors(parsed):
    files = parsed["files"]
    assert len(files) >= 5
    errors = {f: v["errors"] for f, v in files.items() if v["errors"]}
    assert not errors
    for name, info in files.items():
        stem = name[:-3]
        # A file is one DAG named after it, or the DAGs `<file>_<job>` it builds from the specs.
        alone = info["dag_ids"] == [stem]
        per_job = info["dag_ids"] and all(d.startswith(f"{stem}_") for d in info["dag_ids"])
        assert alone or per_job, f"{name}: DAGs {info['dag_ids']} not named after the file"


def test_no_lookups_and_no_heavy_imports_at_parse_time(parsed):
    assert parsed["lookups"] == []
    assert parsed["modules"] == [], f"imported at parse time: {parsed['modules'][:10]}"


def test_parse_time_is_small_and_reported(parsed, output_dir):
    times = {f: v["seconds"] for f, v in parsed["files"].items()}
    lines = [f"{s * 1000:8.1f} ms  {f}" for f, s in sorted(times.items(), key=lambda kv: -kv[1])]
    total = sum(times.values())
    report = "DAG file parse times (DagBag per file, after Airflow is imported)\n" + "\n".join(
        lines
    )
    report += f"\n{total * 1000:8.1f} ms  total for {len(times)} files\n"
    (output_dir / "dag_parse_times.txt").write_text(report)
    print(report)
    # Not a speed test (the figures are reported above): Airflow's own limit is the
    # dagbag import timeout, 30 s per file, past which the file fails to load.
    assert times and max(times.values()) < 30.0


def test_every_dag_explains_itself(parsed):
    dags = parsed["dags"]
    expected = {"backfill", "checkpoint_maintenance", "data_quality", "supervise_service_health"}
    expected |= {f"catchup_{p.stem}" for p in (ROOT / "include" / "jobs").glob("*.yaml")}
    assert expected <= set(dags)
    for dag_id, d in dags.items():
        assert len(d["doc_md"]) > 200, f"{dag_id}: doc_md"
        assert "statekeeper" in d["tags"], f"{dag_id}: tags"
        assert d["owners"] and "airflow" not in d["owners"], f"{dag_id}: owner"
        assert min(d["retries"]) >= 0 and max(d["retries"]) >= 1, f"{dag_id}: retries"
        assert d["params"], f"{dag_id}: params"
        undescribed = [k for k, desc in d["params"].items() if len(desc) < 10]
        assert not undescribed, f"{dag_id}: params without a description: {undescribed}"
    for dag_id in (d for d in dags if d.startswith("catchup_")):
        assert dags[dag_id]["max_active_runs"] == 1
        # one emitter of a job's completeness: a continuous job's supervisor, else its catch-up
        emits = ["emit_completeness"] if dag_id != "catchup_service_health" else []
        assert dags[dag_id]["tasks"] == sorted([*CATCHUP_TASKS, *emits])
    assert dags["supervise_service_health"]["tasks"] == SUPERVISE_TASKS
    for job in (p.stem for p in (ROOT / "include" / "jobs").glob("*.yaml")):
        d = dags[f"table_maintenance_{job}"]
        assert d["tasks"] == ["maintain"] and d["max_active_runs"] == 1
        assert d["schedule"] == "@daily"  # the spec's tables.schedule default
    assert dags["catchup_sessions"]["schedule"] == "@hourly"
    assert dags["catchup_service_health"]["schedule"] == "None"  # continuous: supervised instead


def test_a_new_spec_gets_its_dags_and_a_broken_one_hides_no_other(tmp_path):
    """Adding a job adds no DAG file: a spec in the specs folder is enough for its catch-up DAG
    (and its supervisor, when continuous). A spec that does not load becomes a DAG that says
    why, and every other job's DAGs still load."""
    import shutil

    specs = tmp_path / "specs"
    shutil.copytree(ROOT / "include" / "jobs", specs)
    text = (specs / "sessions.yaml").read_text().replace("name: sessions", "name: sessions_eu")
    text = text.replace("mode: catch-up", "mode: continuous")
    (specs / "sessions_eu.yaml").write_text(text.replace("available-now", "processing-time:30s"))
    # continuous, but its trigger is no processing-time trigger: its supervisor cannot be built
    (specs / "sessions_us.yaml").write_text(text.replace("sessions_eu", "sessions_us"))
    (specs / "broken.yaml").write_text("name: broken\nwatermark: [not, a, duration]\n")
    dags = _parse(tmp_path / "home", STATEKEEPER_SPECS=str(specs))["dags"]
    assert {"catchup_sessions_eu", "supervise_sessions_eu", "catchup_sessions"} <= set(dags)
    assert dags["catchup_sessions_eu"]["file"] == "catchup.py"
    assert "sessions_eu" in dags["catchup_sessions_eu"]["doc_md"]
    assert "supervise_sessions_eu" in dags["catchup_sessions_eu"]["doc_md"]  # the continuous note
    assert dags["supervise_sessions_eu"]["tasks"] == SUPERVISE_TASKS
    for broken in ("catchup_broken", "supervise_sessions_us"):
        assert dags[broken]["tasks"] == ["spec_error"], broken
        assert "cannot be built" in dags[broken]["doc_md"]
    assert "processing-time" in dags["supervise_sessions_us"]["doc_md"]
