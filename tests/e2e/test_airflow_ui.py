"""The Airflow UI, for real: an api-server in the test's own AIRFLOW_HOME with this project's DAGs,
opened in headless Chromium (Debian's package, driven by Playwright): log in, every DAG of
``dags/`` is listed with its tags, and the backfill Trigger form shows its params with their
descriptions. Screenshots go to ``tests/_output/ui/``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from scripts.local_airflow import airflow_env, simple_auth_env
from scripts.local_airflow import api_server as local_api_server
from scripts.local_airflow import token as local_token

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"  # `make browser` installs Debian's package
SHOTS = ROOT / "tests" / "_output" / "ui"
USER, PASSWORD = "admin", "statekeeper-ui-check"
BACKFILL_PARAMS = {  # name -> the start of its description in the form
    "job": "The job to backfill",
    "input": "Folder of JSON-lines events",
    "mode": "append: the folder holds events the live runs never processed",
    "dry_run": "Run and validate on the staged table",
    "output": "Live table to publish into",
}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    """The api-server's STATEKEEPER_DATA: the job specs' checkpoints and tables live here."""
    return tmp_path_factory.mktemp("ui_data")


@pytest.fixture(scope="module")
def real_run(data_dir) -> Iterator[subprocess.Popen]:
    """A real short run of ``sessions`` (generate events, one available-now run), started before
    the api-server so both start up at once; the health test waits for it."""
    env = {
        **os.environ,
        "STATEKEEPER_DATA": str(data_dir),
        "STATEKEEPER_HOME": str(ROOT),
        "PYTHONPATH": f"{ROOT}:{ROOT / 'plugins'}",
    }
    py = sys.executable
    script = (
        f"{py} -m spark_jobs generate clickstream --out {data_dir}/landing/clickstream "
        "--events 3000 --bad-rate 0.02 --seed 11 && "
        f"{py} -m spark_jobs run sessions --trigger available-now"
    )
    with open(data_dir / "run.log", "w") as log:
        proc = subprocess.Popen(
            ["sh", "-c", script],
            env=env,
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="module")
def api_server(tmp_path_factory, data_dir, real_run) -> Iterator[str]:
    home = tmp_path_factory.mktemp("airflow_ui_home")
    env = airflow_env(home, data=data_dir, **simple_auth_env(home, USER, PASSWORD))
    airflow = str(Path(sys.executable).parent / "airflow")
    for step in (["db", "migrate"], ["dags", "reserialize"]):  # the UI lists DAGs from the DB
        done = subprocess.run(
            [airflow, *step], env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, f"airflow {' '.join(step)}: {done.stderr[-1500:]}"
    listed = subprocess.run(
        [airflow, "dags", "list", "-o", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert listed.returncode == 0, f"airflow dags list: {listed.stderr[-1500:]}"
    table = next(ln for ln in listed.stdout.splitlines() if ln.startswith("["))  # logs go first
    DAG_IDS[:] = sorted(d["dag_id"] for d in json.loads(table))
    # what the DB holds is every DAG the folder defines: one per job spec for the generated files
    jobs = [p.stem for p in (ROOT / "include" / "jobs").glob("*.yaml")]
    assert {"backfill", *(f"catchup_{j}" for j in jobs)} <= set(DAG_IDS), DAG_IDS
    with local_api_server(home, env) as base:
        yield base


DAG_IDS: list[str] = []  # the DAGs `airflow dags reserialize` stored (filled by api_server)


def _browser(p):
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: run `make browser`"
    args = [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
    ]
    return p.chromium.launch(executable_path=CHROMIUM, args=args)


def _login(page, base: str) -> None:
    page.goto(f"{base}/")
    page.wait_for_url("**/auth/login**")
    page.locator("input[name=username]").fill(USER)
    page.locator("input[name=password]").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(lambda url: "/auth/login" not in url)


def test_login_dag_list_and_backfill_form(api_server):
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = _browser(p)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(60_000)
            page.goto(f"{api_server}/")
            page.wait_for_url("**/auth/login**")
            page.locator("input[name=username]").fill(USER)
            page.locator("input[name=password]").fill(PASSWORD)
            page.screenshot(path=str(SHOTS / "login.png"))
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url(lambda url: "/auth/login" not in url)

            page.goto(f"{api_server}/dags")
            page.get_by_text(f"{len(DAG_IDS)} Dags").wait_for()
            for dag_id in DAG_IDS:
                page.get_by_text(dag_id, exact=True).first.wait_for()
            listed = page.locator("body").inner_text()
            page.screenshot(path=str(SHOTS / "dag_list.png"), full_page=True)
            assert "catch-up, clickstream, dedup, statekeeper" in listed  # tags are shown
            print(f"UI lists {len(DAG_IDS)} DAGs: {', '.join(DAG_IDS)}")

            page.goto(f"{api_server}/dags/backfill")
            page.get_by_role("button", name="Trigger").first.click()
            page.get_by_text("Run Parameters").wait_for()
            form = page.locator("body").inner_text()
            page.screenshot(path=str(SHOTS / "backfill_trigger.png"), full_page=True)
        finally:
            browser.close()
    missing = [
        name
        for name, doc in BACKFILL_PARAMS.items()
        if f"\n{name}\n" not in form or doc not in form
    ]
    assert not missing, f"backfill form lacks params {missing}:\n{form}"
    print(f"backfill Trigger form shows params: {', '.join(BACKFILL_PARAMS)} (with descriptions)")


# -- Streaming health ----------------------------------------------------------------------------
JOBS = sorted(p.stem for p in (ROOT / "include" / "jobs").glob("*.yaml"))
HISTORY_JOB, HISTORY_BATCHES = "service_health", 300  # a synthetic continuous history


def _log_facts(checkpoint: Path) -> dict:
    """What the page must show for a job, computed here straight from its progress log."""
    log = checkpoint / "_statekeeper" / "progress.jsonl"
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    # batch records carry no "event"; idle and heartbeat lines (a batch running long, as on a
    # slow machine) are not batches
    batches = [r for r in records if "event" not in r]
    last = batches[-1]
    ops = last["stateOperators"]
    keys = last["keys"]["total"] if "keys" in last else sum(op["numRowsTotal"] for op in ops)
    return {
        "batches": len(batches),
        "last_batch_id": last["batchId"],
        "state_keys": keys,
        "state_memory_bytes": sum(op["memoryUsedBytes"] for op in ops),
        "batch_duration_ms": last["durationMs"]["triggerExecution"],
        "input_rows_per_second": last["inputRowsPerSecond"],
        "processed_rows_per_second": last["processedRowsPerSecond"],
    }


def _quarantined_rows(table: Path) -> int:
    """Rows the quarantine query committed, summed from the Delta log's commit infos."""
    total = 0
    for f in sorted((table / "_delta_log").glob("*.json")):
        for line in f.read_text().splitlines():
            info = json.loads(line).get("commitInfo") or {}
            total += int((info.get("operationMetrics") or {}).get("numOutputRows") or 0)
    return total


def _get(url: str, token: str | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def _no_horizontal_scroll(frame_or_page) -> bool:
    return frame_or_page.evaluate(
        "() => document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )


def test_streaming_health_page_and_api(api_server, data_dir, real_run):
    from playwright.sync_api import sync_playwright

    from bench.synthetic_progress import write_history
    from spark_jobs.contract.lock import JobLock

    assert real_run.wait(timeout=900) == 0, (data_dir / "run.log").read_text()[-3000:]
    history = data_dir / "checkpoints" / HISTORY_JOB
    write_history(history, HISTORY_JOB, HISTORY_BATCHES, time.time() - 5)
    facts = {
        "sessions": _log_facts(data_dir / "checkpoints" / "sessions"),
        HISTORY_JOB: _log_facts(history),
    }
    quarantined = _quarantined_rows(data_dir / "tables" / "sessions" / "_quarantine")
    assert quarantined > 0  # the generator wrote bad lines

    # -- the API: 401 without a token on every kind of route, the log's numbers with one
    for path in (
        "/statekeeper/",
        "/statekeeper/api/health",
        "/statekeeper/jobs/sessions",
        "/statekeeper/api/jobs/sessions/progress",
        "/statekeeper/static/health.css",
    ):
        assert _get(api_server + path)[0] == 401, path
    token = local_token(api_server, USER, PASSWORD)
    with JobLock(str(history), job=HISTORY_JOB):  # a live driver holds the continuous job
        status, body = _get(f"{api_server}/statekeeper/api/health", token)
        assert status == 200, body[:500]
        rows = {r["job"]: r for r in json.loads(body)}
        assert sorted(rows) == JOBS
        assert rows["sessions"]["status"] == "idle"  # a catch-up job between runs
        assert rows[HISTORY_JOB]["status"] == "running"
        for job in sorted(set(JOBS) - set(facts)):
            assert rows[job]["status"] == "never_run" and rows[job]["last_batch_at"] is None
        for job, f in facts.items():
            for key in (
                "last_batch_id",
                "state_keys",
                "state_memory_bytes",
                "batch_duration_ms",
                "input_rows_per_second",
                "processed_rows_per_second",
            ):
                assert rows[job][key] == f[key], (job, key, rows[job][key], f[key])
        assert rows["sessions"]["quarantined_rows"] == quarantined
        status, body = _get(
            f"{api_server}/statekeeper/api/jobs/{HISTORY_JOB}/progress?limit=7", token
        )
        records = json.loads(body)
        assert status == 200 and [r["batchId"] for r in records] == list(range(293, 300))
        status, body = _get(f"{api_server}/statekeeper/api/jobs/nope/progress", token)
        assert status == 404 and b"unknown job 'nope'" in body

        # -- the page, opened from the navigation, inside the UI, at 1,280 px
        SHOTS.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as p:
            browser = _browser(p)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.set_default_timeout(60_000)
                _login(page, api_server)
                page.get_by_role("link", name="Streaming health").first.click()
                page.wait_for_url("**/plugin/streaming-health**")
                frame = page.frame_locator("iframe[title='Streaming health']")
                for job in JOBS:
                    frame.locator(f"tr[data-job='{job}']").wait_for()
                table = frame.locator("table.jobs")
                for job, f in facts.items():
                    row = table.locator(f"tr[data-job='{job}']")
                    for key in ("state_keys", "state_memory_bytes", "batch_duration_ms"):
                        cell = row.locator(f"td[data-field='{key}']")
                        assert float(cell.get_attribute("data-value")) == f[key], (job, key)
                    assert (
                        f"{f['state_keys']:,}"
                        in row.locator("td[data-field='state_keys']").inner_text()
                    )
                    assert f"{f['state_memory_bytes'] / 1e6:,.1f} MB" in row.inner_text()
                    assert "ev/s" in row.inner_text()
                assert "never run" in table.locator("tr[data-job='fraud_alerts']").inner_text()
                inner = page.frame(url=lambda u: "/statekeeper/" in u)
                assert inner is not None
                assert _no_horizontal_scroll(inner) and _no_horizontal_scroll(page)
                page.screenshot(path=str(SHOTS / "health.png"), full_page=True)

                page.set_viewport_size({"width": 1280, "height": 1500})  # all six charts
                frame.get_by_role("link", name="sessions", exact=True).click()
                frame.locator("figure.chart").nth(5).wait_for()
                text = frame.locator("body").inner_text()
                assert f"{facts['sessions']['batches']:,} batches in range" in text
                inner = page.frame(url=lambda u: "/statekeeper/jobs/" in u)
                assert inner is not None and _no_horizontal_scroll(inner)
                page.screenshot(path=str(SHOTS / "health_job.png"))

                frame.get_by_role("link", name="← all jobs").click()
                frame.get_by_role("link", name=HISTORY_JOB, exact=True).click()
                frame.get_by_role("link", name="all", exact=True).click()
                frame.get_by_text(f"{HISTORY_BATCHES:,} batches in range").wait_for()
                assert frame.locator("figure.chart polyline").count() >= 5
                page.screenshot(path=str(SHOTS / "health_job_history.png"))
            finally:
                browser.close()
    print(f"health page: {len(JOBS)} jobs, numbers equal to the logs; screenshots in {SHOTS}")
