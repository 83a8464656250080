"""``upgrade preview`` on a live fraud_alerts checkpoint (real Spark and Delta): v1 (threshold 5)
runs over two arrivals with a snapshot between them, a third arrival lands unread, and the spec
in ``$STATEKEEPER_SPECS`` then says threshold 3. The preview from the snapshot reports exactly
the alerts threshold 3 would have written differently over the second arrival (worked out by
hand below), reads nothing of the third, and leaves every file of the live checkpoint and tables
byte for byte as it was.

One Spark-heavy preview (module fixture); the refusals around it need no Spark."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from jobkit import cli, upgrade_env, write_lines
from test_upgrade_fraud import auth, failures, write_spec

from spark_jobs.checkpoints import roots
from spark_jobs.checkpoints.snapshots import take_snapshot
from spark_jobs.contract import events
from spark_jobs.contract.errors import ExitCode
from spark_jobs.contract.lock import JobLock
from spark_jobs.contract.spec import load_spec
from spark_jobs.jobs.runner import run_job

pytestmark = pytest.mark.integration

# Arrival 1 (v1 and the snapshot): u1's 5th failure at 4 alerts under either threshold; the
# clock takes the watermark to 90, so u5's failures at 95 and 96 are held in the snapshot.
ARRIVAL_1 = [
    *failures("u1", [0, 1, 2, 3, 4]),
    *failures("u5", [95, 96]),
    auth("clock1", "u9", 100, "LOGIN_SUCCESS"),
]
# Arrival 2, read by v1 after the snapshot; the clock takes the watermark to 190, past all.
ARRIVAL_2 = [
    *failures("u5", [104]),  # 3rd of the held run: threshold 3 alerts at 104, v1 does not
    *failures("u3", [110, 111, 112]),  # threshold 3 alerts at 112
    *failures("u6", [130, 131, 132, 133, 134]),  # v1 alerts at 134, threshold 3 at 132 only
    auth("clock2", "u9", 200, "LOGIN_SUCCESS"),
]
# Arrival 3 lands after the live job's last run: the preview must not read it (u7 would alert).
ARRIVAL_3 = [*failures("u7", [210, 211, 212]), auth("clock3", "u9", 300, "LOGIN_SUCCESS")]

T = "2026-03-15T{}:00"  # alert times as the samples spell them (ISO-8601, session tz UTC)
ADDED = [("u3", T.format("13:52")), ("u5", T.format("13:44")), ("u6", T.format("14:12"))]
REMOVED = [("u6", T.format("14:14"))]


def digest(*folders: Path) -> dict[str, str]:
    """sha256 of every file under the folders, by path."""
    return {
        str(p): hashlib.sha256(p.read_bytes()).hexdigest()
        for f in folders
        for p in sorted(f.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def outcome(spark, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("upgrade_preview")
    mp = pytest.MonkeyPatch()
    specs = upgrade_env(mp, tmp)
    got: dict = {"tmp": tmp, "ck": tmp / "ckpt" / "fraud_alerts"}
    try:
        land = tmp / "land" / "auth"
        write_spec(specs, tmp, threshold=5)
        write_lines(land, "a1.json", ARRIVAL_1)
        run_job(load_spec("fraud_alerts"), spark=spark)
        got["snapshot"] = take_snapshot(roots.resolve("fraud_alerts", None))
        write_lines(land, "a2.json", ARRIVAL_2)
        run_job(load_spec("fraud_alerts"), spark=spark)
        write_lines(land, "a3.json", ARRIVAL_3)
        write_spec(specs, tmp, threshold=3)
        live = (got["ck"], tmp / "out")
        got["before"] = digest(*live)
        since = str(got["snapshot"]["batch"])
        got["preview"] = cli("upgrade", "preview", "fraud_alerts", "--since", since, "--json")
        got["after"] = digest(*live)
        got["events"] = events.read("fraud_alerts")
        got["commits"] = sorted(int(p.name) for p in (got["ck"] / "commits").glob("[0-9]*"))
        yield got
    finally:
        mp.undo()


def test_preview_reports_exactly_the_alerts_that_differ(outcome):
    code, out, err = outcome["preview"]
    assert code == 0, err
    r = json.loads(out)
    assert r["snapshot"] == outcome["snapshot"]["id"]
    assert r["input_files"] == 1  # a2.json only: a3.json landed after the live job's last batch
    assert r["shadow_run"]["input_rows"] == len(ARRIVAL_2)
    assert r["key"] == ["user_id", "alert_time"]
    assert r["added"]["count"] == 3 and r["removed"]["count"] == 1
    assert r["changed"] == {"count": 0, "samples": []}
    got = [(s["user_id"], s["alert_time"]) for s in r["added"]["samples"]]
    assert got == ADDED
    assert [s["failed_attempts"] for s in r["added"]["samples"]] == [3, 3, 3]
    assert [(s["user_id"], s["alert_time"]) for s in r["removed"]["samples"]] == REMOVED
    assert r["removed"]["samples"][0]["failed_attempts"] == 5


def test_live_checkpoint_and_table_are_byte_identical(outcome):
    assert outcome["before"] == outcome["after"]
    assert len(outcome["before"]) > 20  # the hashes cover the real files
    assert not (outcome["ck"] / "_statekeeper" / "preview").exists()


def test_the_shadow_run_adds_no_rows_to_the_event_log(outcome):
    # the job's runs and batches only: the shadow's start, stop or batches are not the job's
    assert not [r for r in outcome["events"] if "/preview/" in r["checkpoint"]]
    batches = sorted(r["batch_id"] for r in outcome["events"] if r["kind"] == "batch")
    assert batches == outcome["commits"] and len(batches) >= 3


@pytest.mark.parametrize(
    ("argv", "code", "says"),
    [
        (["nosuchjob", "--since", "0"], ExitCode.USER_ERROR, "nosuchjob"),
        (["fraud_alerts", "--since", "99"], ExitCode.USER_ERROR, "in the future"),
        (["fraud_alerts", "--since", "2999-01-01T00:00:00Z"], ExitCode.USER_ERROR, "future"),
        (["fraud_alerts", "--since", "2020-01-01T00:00:00Z"], ExitCode.USER_ERROR, "holds: "),
        (["fraud_alerts", "--since", "soon"], ExitCode.USER_ERROR, "neither a time"),
    ],
)
def test_user_errors_are_one_line_and_non_zero(outcome, argv, code, says):
    before = digest(outcome["ck"])  # the fixture's environment holds until the module ends
    got, out, err = cli("upgrade", "preview", *argv)
    assert got == code and says in err and err.count("\n") == 1 and not out
    assert digest(outcome["ck"]) == before


def test_a_running_job_holding_the_lock_is_refused(outcome):
    with JobLock(str(outcome["ck"]), job="fraud_alerts", purpose="run"):
        code, out, err = cli("upgrade", "preview", "fraud_alerts", "--since", "1")
    assert code == ExitCode.LOCK_HELD and "in use by run of job fraud_alerts" in err
    assert err.count("\n") == 1
