"""A checkpoint written by the release before typed state, migrated forward by the job's own
rule (real Spark, Delta, RocksDB): ``sessions`` on the batched executor runs arrival 1; its state
is then written back in the old bucket form (``keys int, blob binary``, through
tests/integration/jobs_v2/sessions_v0.py and ``upgrade migrate --with``), as a deployment of that
release would have left it. With the current code, ``plan`` calls the bucket row's change
``migrate``, ``run`` refuses, ``upgrade migrate`` applies ``JobDef.state_rules`` (no ``--with``),
the same migration accepts ``last_pages`` 10 -> 5 (``compatible``), and arrival 2 gives exactly
the sessions the hand-checked test works out for the same events in one arrival, plus a new
user's seven page views cut to the last five: open sessions crossed two state formats intact,
and the new parameter holds from the migration on."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from jobkit import at, cli, rows, ts, upgrade_env, write_lines

from spark_jobs.contract import paths
from spark_jobs.contract.errors import ExitCode, UserError
from spark_jobs.contract.spec import load_spec
from spark_jobs.jobs import EXTRA_MODULES_ENV
from spark_jobs.jobs.runner import run_job

pytestmark = pytest.mark.integration


def click(eid, user, minute, etype="page_view", page="/p", dur=10):
    return {
        "event_id": eid,
        "user_id": user,
        "event_type": etype,
        "page": page,
        "duration_sec": dur,
        "event_time": at(minute),
    }


# test_jobs_hand_checked.py::test_sessions's events, in two arrivals
ARRIVAL_1 = [
    click("a2", "u1", 0, "page_view", "/home", 10),
    click("a3", "u1", 10, "checkout", "/checkout", None),
    click("b1", "u2", 5, "page_view", "/x", 2),
]
ARRIVAL_2 = [
    click("a1", "u1", 20, "purchase", None, 5),
    click("a4", "u1", 80, "page_view", "/again", 1),  # 60 min after a1: a new session
    click("z1", "u3", 200, "page_view", "/late", 1),  # moves the watermark to 190
    # after the migration, last_pages is 5: seven page views keep their last five pages
    *[click(f"v{i}", "u4", 100 + i, "page_view", f"/p{i}", 1) for i in range(7)],
]


def test_state_of_the_release_before_typed_state_is_migrated_by_the_jobs_rule(
    spark, tmp_path, monkeypatch
):
    from spark_jobs.state.sessions import session_id

    specs, land = tmp_path / "specs", tmp_path / "land" / "clickstream"
    upgrade_env(monkeypatch, tmp_path)
    raw = yaml.safe_load((paths.project_root() / "include" / "jobs" / "sessions.yaml").read_text())
    raw.update(
        inputs={"clickstream": str(land)},
        output=str(tmp_path / "out"),
        checkpoint=str(tmp_path / "ckpt" / "sessions"),
        shuffle_partitions=2,
    )
    specs.mkdir()
    (specs / "sessions.yaml").write_text(yaml.safe_dump(raw))
    assert raw["executor"] == "batched"

    write_lines(land, "a1.json", ARRIVAL_1)
    run_job(load_spec("sessions"), spark=spark)

    # the state as the release before typed state kept it
    monkeypatch.syspath_prepend(str(Path(__file__).parent / "jobs_v2"))
    monkeypatch.setenv(EXTRA_MODULES_ENV, "sessions_v0")
    # a rule that raises on the executors: one line, and the live state as it was (the
    # migration below starts from it, and the final rows are the hand-checked ones)
    code, _, err = cli("upgrade", "migrate", "sessions", "--with", "sessions_v0:explodes")
    assert code == ExitCode.USER_ERROR and err.count("\n") == 1, err
    assert "refused, nothing changed: --with sessions_v0:explodes ValueError: cannot" in err
    code, out, err = cli("upgrade", "migrate", "sessions", "--with", "sessions_v0:to_blob")
    assert code == 0, err
    assert "state rewritten (2 keys, rule: --with sessions_v0:to_blob)" in out
    monkeypatch.delenv(EXTRA_MODULES_ENV)

    write_lines(land, "a2.json", ARRIVAL_2)
    with pytest.raises(UserError, match="no longer matches.*upgrade plan sessions"):
        run_job(load_spec("sessions"), spark=spark)
    raw["params"]["last_pages"] = 5
    (specs / "sessions.yaml").write_text(yaml.safe_dump(raw))
    code, out, _ = cli("upgrade", "plan", "sessions")
    assert code == ExitCode.UPGRADE_MIGRATE
    assert "migrate      state.blob: 'binary' -> None" in out
    assert "compatible   params.last_pages: 10 -> 5" in out
    code, out, err = cli("upgrade", "migrate", "sessions")
    assert code == 0, err
    assert "state rewritten (2 keys, rule: sessions's rule from 'keys int, blob binary')" in out
    assert cli("upgrade", "plan", "sessions")[0] == 0

    assert run_job(load_spec("sessions"), spark=spark).input_rows == len(ARRIVAL_2)

    def sid(user, minute):
        return session_id(
            user, int(ts(minute).replace(tzinfo=__import__("datetime").UTC).timestamp() * 1000)
        )

    assert rows(spark, str(tmp_path / "out"), ["user_id", "session_start"]) == [
        ("u1", sid("u1", 0), ts(0), ts(20), 3, 1, 15, ["/home"], True, True),
        ("u1", sid("u1", 80), ts(80), ts(80), 1, 1, 1, ["/again"], False, False),
        ("u2", sid("u2", 5), ts(5), ts(5), 1, 1, 2, ["/x"], False, False),
        (
            "u4",
            sid("u4", 100),
            ts(100),
            ts(106),
            7,
            7,
            7,
            [f"/p{i}" for i in range(2, 7)],
            False,
            False,
        ),
    ]


def test_fraud_state_of_the_release_before_typed_state_moves_forward_with_a_new_threshold(
    spark, tmp_path, monkeypatch
):
    """fraud_alerts (batched): arrival 1 at threshold 5, its state written back in the old
    bucket form; then the current code at threshold 3: one migration applies the job's rule and
    the threshold, and arrival 2 gives the alerts test_upgrade_fraud.py works out by hand,
    including a failure run held in state across both formats."""
    from test_upgrade_fraud import ARRIVAL_1, ARRIVAL_2, EXPECTED, write_spec

    specs = tmp_path / "specs"
    upgrade_env(monkeypatch, tmp_path)
    land = tmp_path / "land" / "auth"
    write_spec(specs, tmp_path, threshold=5)
    write_lines(land, "a1.json", ARRIVAL_1)
    run_job(load_spec("fraud_alerts"), spark=spark)

    monkeypatch.syspath_prepend(str(Path(__file__).parent / "jobs_v2"))
    monkeypatch.setenv(EXTRA_MODULES_ENV, "fraud_alerts_v0")
    code, out, err = cli("upgrade", "migrate", "fraud_alerts", "--with", "fraud_alerts_v0:to_blob")
    assert code == 0, err
    monkeypatch.delenv(EXTRA_MODULES_ENV)

    write_spec(specs, tmp_path, threshold=3)
    code, out, _ = cli("upgrade", "plan", "fraud_alerts")
    assert code == ExitCode.UPGRADE_MIGRATE
    assert "migrate      state.blob: 'binary' -> None" in out
    assert "compatible   params.threshold: 5 -> 3" in out
    code, out, err = cli("upgrade", "migrate", "fraud_alerts")
    assert code == 0, err
    assert "rule: fraud_alerts's rule from 'keys int, blob binary'" in out
    write_lines(land, "a2.json", ARRIVAL_2)
    assert run_job(load_spec("fraud_alerts"), spark=spark).input_rows == len(ARRIVAL_2)
    assert rows(spark, str(tmp_path / "out")) == EXPECTED
