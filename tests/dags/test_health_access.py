"""Who sees which job on the Streaming health app, with Airflow's own auth: a real JWT from the
configured auth manager (Airflow's simple one, granting DAG-level read as FAB or Keycloak can),
Airflow's ``get_user`` and the revoked-token check on a migrated DB, and the app's routes. A user
sees exactly the jobs whose own DAGs (``catchup_<job>``, ``supervise_<job>``) they may read,
whatever ``dag_id`` the query string names; the OpenAPI schema needs a token like every route."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from airflow_env import ROOT, airflow_env

pytestmark = pytest.mark.dags

HERE = Path(__file__).resolve().parent
GRANTS = {"ana": ["catchup_clicks", "supervise_pulse"], "bo": ["backfill"]}


def _spec(folder: Path, name: str, root: Path, mode: str) -> None:
    (folder / f"{name}.yaml").write_text(
        f"name: {name}\nmode: {mode}\ninputs: {{clickstream: {root}/landing}}\n"
        f"output: {root}/tables/{name}\ncheckpoint: {root}/checkpoints/{name}\n"
        "watermark: 10 minutes\ntrigger: processing-time:30s\n"
    )


@pytest.fixture(scope="module")
def ask(airflow_home, tmp_path_factory):
    root = tmp_path_factory.mktemp("access")
    specs = root / "specs"
    specs.mkdir()
    for name, mode in (("clicks", "catch-up"), ("pulse", "continuous"), ("secret", "catch-up")):
        _spec(specs, name, root, mode)
    env = airflow_env(
        airflow_home,
        root,
        STATEKEEPER_SPECS=str(specs),
        STATEKEEPER_TEST_GRANTS=json.dumps(GRANTS),
        AIRFLOW__CORE__AUTH_MANAGER="health_access_main.DagLevelAuthManager",
        AIRFLOW__API_AUTH__JWT_SECRET="s" * 64,
    )
    env["PYTHONPATH"] = f"{HERE}:{env.get('PYTHONPATH', '')}"

    def ask(*requests: tuple) -> list[tuple[int, object]]:
        proc = subprocess.run(
            [sys.executable, str(HERE / "health_access_main.py")],
            input=json.dumps({"requests": [list(r) for r in requests]}),
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return [tuple(x) for x in json.loads(proc.stdout.splitlines()[-1])]

    return ask


def test_a_user_sees_only_the_jobs_whose_dags_they_may_read(ask):
    health, page, shared, job = ask(
        ("ana", "/api/health", {"dag_id": "catchup_clicks"}),
        ("ana", "/", None),
        ("bo", "/api/health", None),  # read access to a DAG every job shares grants no job
        ("ana", "/api/jobs/pulse/progress", None),
    )
    assert health[0] == 200, health
    assert sorted(r["job"] for r in health[1]) == ["clicks", "pulse"]
    assert page[0] == 200 and "clicks" in page[1] and "secret" not in page[1]
    assert shared == (200, [])
    assert job == (200, [])


def test_a_job_route_needs_read_access_to_the_jobs_own_dags(ask):
    routes = ["/api/jobs/secret/progress", "/api/jobs/secret/series", "/jobs/secret"]
    # the query string names a DAG the user may read: it must not decide
    for route, (status, body) in zip(
        routes, ask(*[("ana", r, {"dag_id": "catchup_clicks"}) for r in routes]), strict=True
    ):
        assert status == 403, (route, body)
        assert "no access to job 'secret'" in body["detail"]


def test_nothing_is_served_without_a_token(ask):
    got = ask(
        (None, "/api/openapi.json", None),
        (None, "/api/health", None),
        (None, "/", None),
        (None, "/static/health.css", None),
        ("ana", "/api/openapi.json", None),
        (None, "/docs", None),
    )
    assert [s for s, _ in got[:4]] == [401, 401, 401, 401], got
    assert got[4][0] == 200 and "/api/health" in got[4][1]["paths"]
    assert got[5][0] in (401, 404)
