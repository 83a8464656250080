"""The Airflow UI, for real: an api-server in the test's own AIRFLOW_HOME with this project's DAGs,
opened in headless Chromium (Debian's package, driven by Playwright): log in, every DAG of
``dags/`` is listed with its tags, and the backfill Trigger form shows its params with their
descriptions. Screenshots go to ``tests/_output/ui/``."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from scripts.local_airflow import airflow_env

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"  # `make browser` installs Debian's package
SHOTS = ROOT / "tests" / "_output" / "ui"
USER, PASSWORD = "admin", "statekeeper-ui-check"
DAG_IDS = sorted(p.stem for p in (ROOT / "dags").glob("*.py") if not p.name.startswith("_"))
BACKFILL_PARAMS = {  # name -> the start of its description in the form
    "job": "The job to backfill",
    "input": "Folder of JSON-lines events",
    "mode": "replace: the staged rows replace",
    "dry_run": "Run and validate on the staged table",
    "output": "Live table to publish into",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def api_server(tmp_path_factory) -> Iterator[str]:
    home = tmp_path_factory.mktemp("airflow_ui_home")
    passwords = home / "passwords.json"
    passwords.write_text(json.dumps({USER: PASSWORD}))  # the simple auth manager keeps it
    env = airflow_env(home)
    env.update(
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS=f"{USER}:admin",
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE=str(passwords),
    )
    airflow = str(Path(sys.executable).parent / "airflow")
    for step in (["db", "migrate"], ["dags", "reserialize"]):  # the UI lists DAGs from the DB
        done = subprocess.run(
            [airflow, *step], env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, f"airflow {' '.join(step)}: {done.stderr[-1500:]}"
    port = _free_port()
    with open(home / "api-server.log", "w") as log:
        proc = subprocess.Popen(
            [airflow, "api-server", "--port", str(port)],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=str(ROOT),
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 180  # generous: the machine is shared
        while True:
            assert proc.poll() is None, (home / "api-server.log").read_text()[-2000:]
            try:
                with urllib.request.urlopen(f"{base}/api/v2/monitor/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert time.time() < deadline, "api-server not healthy after 180 s"
            time.sleep(1)
        yield base
    finally:  # the server and every process it started go, whatever the test did
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_login_dag_list_and_backfill_form(api_server):
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: run `make browser`"
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--no-first-run"]  # fmt: skip
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=args)
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
