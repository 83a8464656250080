"""``upgrade`` on a live fraud_alerts checkpoint (real Spark and Delta): v1 (threshold 5) runs
over one arrival; the spec in ``$STATEKEEPER_SPECS`` then says threshold 3. ``upgrade plan``
calls it compatible and names the parameter, ``run`` refuses it naming the plan, ``upgrade
migrate`` records it (snapshot first), and the run after it reads only the second arrival and
writes what v1 up to the migration and v2 after it give, worked out by hand below.

One shared run of each step (module fixture); the tests assert on its outcome."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from jobkit import at, cli, rows, ts, upgrade_env, write_lines

from spark_jobs.checkpoints.manifests import list_snapshots
from spark_jobs.contract import paths
from spark_jobs.contract.errors import ExitCode, UserError
from spark_jobs.contract.spec import load_spec
from spark_jobs.jobs.fraud_alerts import STATE_SCHEMA
from spark_jobs.jobs.runner import run_job

pytestmark = pytest.mark.integration

IPS = ["10.0.0.1"]


def auth(eid: str, user: str, minute: float, etype: str = "LOGIN_FAILED") -> dict:
    return {
        "event_id": eid,
        "user_id": user,
        "event_type": etype,
        "ip": IPS[0],
        "event_time": at(minute),
    }


def failures(user: str, minutes: list[float]) -> list[dict]:
    return [auth(f"{user}-{m}", user, m) for m in minutes]


# Arrival 1, run by v1 (threshold 5). The clock (u9 at 100) takes the watermark to 90: every
# failure up to 90 is applied, u5's two at 95 and 96 stay held in state across the migration.
ARRIVAL_1 = [
    *failures("u1", [0, 1, 2, 3, 4]),  # 5th failure at 4: v1 alerts
    *failures("u2", [0, 1, 2, 3]),  # 4 failures: no alert under 5 (under 3 there would be one)
    *failures("u5", [95, 96]),  # held: open across the migration
    auth("clock1", "u9", 100, "LOGIN_SUCCESS"),
]
# Arrival 2, run after the migration (threshold 3); the clock takes the watermark to 190.
ARRIVAL_2 = [
    *failures("u5", [104]),  # within 10 min of 96: u5's run reaches 3 at 104
    *failures("u3", [110, 111, 112]),  # 3rd at 112
    *failures("u4", [110, 111, 112, 113]),  # 3rd at 112 alerts and resets; 113 starts a new run
    *failures("u1", [120, 121, 122]),  # 3rd at 122
    auth("clock2", "u9", 200, "LOGIN_SUCCESS"),
]
# The reference, by the rule (docs/contracts.md §3, the threshold-th counted failure alerts and
# resets): v1's alerts for what the watermark passed before the migration, threshold 3 after.
EXPECTED = [
    ("u1", ts(4), ts(0), 5, 1, IPS),
    ("u1", ts(122), ts(120), 3, 1, IPS),
    ("u3", ts(112), ts(110), 3, 1, IPS),
    ("u4", ts(112), ts(110), 3, 1, IPS),
    ("u5", ts(104), ts(95), 3, 1, IPS),
]


def write_spec(specs: Path, tmp: Path, threshold: int) -> None:
    raw = yaml.safe_load(
        (paths.project_root() / "include" / "jobs" / "fraud_alerts.yaml").read_text()
    )
    raw.update(
        inputs={"auth": str(tmp / "land" / "auth")},
        output=str(tmp / "out"),
        checkpoint=str(tmp / "ckpt" / "fraud_alerts"),
        shuffle_partitions=2,
    )
    raw["params"]["threshold"] = threshold
    specs.mkdir(exist_ok=True)
    (specs / "fraud_alerts.yaml").write_text(yaml.safe_dump(raw))


@pytest.fixture(scope="module")
def outcome(spark, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("upgrade_fraud")
    mp = pytest.MonkeyPatch()
    specs = upgrade_env(mp, tmp)
    got: dict = {"tmp": tmp}
    try:
        land = tmp / "land" / "auth"
        write_spec(specs, tmp, threshold=5)
        write_lines(land, "a1.json", ARRIVAL_1)
        run_job(load_spec("fraud_alerts"), spark=spark)
        got["v1_rows"] = rows(spark, str(tmp / "out"))

        write_spec(specs, tmp, threshold=3)
        got["plan"] = cli("upgrade", "plan", "fraud_alerts")
        got["plan_json"] = cli("upgrade", "plan", "fraud_alerts", "--json")
        write_lines(land, "a2.json", ARRIVAL_2)
        try:
            run_job(load_spec("fraud_alerts"), spark=spark)
        except UserError as exc:
            got["refused"] = exc
        ck = tmp / "ckpt" / "fraud_alerts"
        got["batches_before"] = sorted(
            int(p.name) for p in (ck / "commits").iterdir() if p.name.isdigit()
        )
        got["migrate"] = cli("upgrade", "migrate", "fraud_alerts")
        got["snapshots"] = list_snapshots(str(tmp / "data" / "snapshots" / "fraud_alerts"))
        got["binding"] = json.loads((ck / "_statekeeper" / "job.json").read_text())
        got["plan_after"] = cli("upgrade", "plan", "fraud_alerts")
        got["run2"] = run_job(load_spec("fraud_alerts"), spark=spark)
        got["rows"] = rows(spark, str(tmp / "out"))
        got["progress"] = [
            json.loads(line)
            for line in (ck / "_statekeeper" / "progress.jsonl").read_text().splitlines()
        ]
        got["source_log"] = {
            int(p.name): [json.loads(x)["path"] for x in p.read_text().splitlines()[1:]]
            for p in (ck / "sources" / "0").iterdir()
            if p.name.isdigit()
        }
        yield got
    finally:
        mp.undo()


def test_v1_alerts_at_five(outcome):
    assert outcome["v1_rows"] == [("u1", ts(4), ts(0), 5, 1, IPS)]


def test_plan_calls_the_threshold_compatible_and_names_it(outcome):
    code, out, _ = outcome["plan"]
    assert code == ExitCode.UPGRADE_COMPATIBLE
    assert "compatible   params.threshold: 5 -> 3" in out
    code, out, _ = outcome["plan_json"]
    plan = json.loads(out)
    assert code == 30 and plan["worst"] == "compatible"
    assert [(c["field"], c["before"], c["after"]) for c in plan["changes"]] == [
        ("params.threshold", 5, 3)
    ]


def test_run_refuses_before_migrate_naming_the_plan(outcome):
    exc = outcome["refused"]
    assert "params.threshold=5" in str(exc) and "upgrade plan fraud_alerts" in str(exc)
    assert exc.exit_code == ExitCode.USER_ERROR
    assert outcome["batches_before"] == [0, 1]  # the refused run wrote no batch


def test_migrate_records_the_declaration_after_a_snapshot(outcome):
    code, out, err = outcome["migrate"]
    assert code == 0, err
    assert "accepted params.threshold 5 -> 3" in out
    b = outcome["binding"]
    assert b["fingerprint"]["params"]["threshold"] == 3
    # recorded at the first run, kept by the migration
    assert b["declaration"] == {"state_key": ["user_id"], "state_schema": STATE_SCHEMA}
    (up,) = b["upgrades"]
    assert up["snapshot"] and up["batch"] == 1
    assert [c["field"] for c in up["changes"]] == ["params.threshold"]
    assert [s["id"] for s in outcome["snapshots"]] == [up["snapshot"]]
    code, out, _ = outcome["plan_after"]
    assert code == 0 and "nothing changed" in out


def test_the_next_run_reads_only_the_new_file(outcome):
    new = [p for p in outcome["progress"] if p.get("batchId", -1) > 1 and "numInputRows" in p]
    assert sum(p["numInputRows"] for p in new) == len(ARRIVAL_2)
    # the file source's log offsets those batches read, and the files logged under them
    read = {
        n
        for p in new
        for src in p["sources"]
        for n in range(src["startOffset"]["logOffset"] + 1, src["endOffset"]["logOffset"] + 1)
    }
    files = [Path(f).name for n in sorted(read) for f in outcome["source_log"][n]]
    assert files == ["a2.json"]


def test_the_table_is_v1_then_v2(outcome):
    assert outcome["rows"] == EXPECTED
