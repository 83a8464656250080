"""Every job end to end on local Spark and Delta, on small hand-made inputs with outputs worked
out by hand (docs/contracts.md §3)."""

import pytest
from jobkit import at, job_spec, rows, ts, write_lines

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


def test_sessions(spark, tmp_path):
    land = tmp_path / "land" / "clickstream"
    write_lines(
        land,
        "a.json",
        [
            click("a1", "u1", 20, "purchase", None, 5),
            click("a2", "u1", 0, "page_view", "/home", 10),  # out of order within the batch
            click("a3", "u1", 10, "checkout", "/checkout", None),
            click("a4", "u1", 80, "page_view", "/again", 1),  # 60 min after a1: a new session
            click("b1", "u2", 5, "page_view", "/x", 2),
            click("z1", "u3", 200, "page_view", "/late", 1),  # moves the watermark to 190
        ],
    )
    # One hash bucket: a bucket settles by its own events (a batch of many users fills each of
    # the default 256 with events near the batch's newest); here the one holds them all.
    spec = job_spec("sessions", tmp_path)
    summary = run_job(
        job_spec("sessions", tmp_path, params={**spec.params, "buckets": 1}), spark=spark
    )
    got = rows(spark, str(tmp_path / "out"), ["user_id", "session_start"])
    from spark_jobs.state.sessions import session_id

    def sid(user, minute):
        return session_id(
            user, int(ts(minute).replace(tzinfo=__import__("datetime").UTC).timestamp() * 1000)
        )

    assert got == [
        ("u1", sid("u1", 0), ts(0), ts(20), 3, 1, 15, ["/home"], True, True),
        ("u1", sid("u1", 80), ts(80), ts(80), 1, 1, 1, ["/again"], False, False),
        ("u2", sid("u2", 5), ts(5), ts(5), 1, 1, 2, ["/x"], False, False),
    ]  # u3's session is still open (190 < 200 + 30): it stays in state
    assert summary.state_rows == 1 and summary.batches == 2 and summary.quarantined == 0
    # The first batch's own events already put the next watermark at 190 (200 - 10), so the
    # three sessions ending by 160 are emitted there, not carried through state to batch 1
    # (before: [0, 3]).
    from spark_jobs.runtime.progress import read_progress

    emitted = [r["keys"]["emitted"] for r in read_progress(str(tmp_path / "ckpt"))]
    assert emitted == [3, 0], emitted


def test_sessions_keeps_open_what_a_late_event_may_still_extend(spark, tmp_path):
    # Batch 0's newest event (u3, minute 35) puts the next watermark at 25 (35 - the 10-minute
    # delay), so u1's session (minute 0, closing at 0 + 30) is not yet due; batch 1's event of
    # u1 at minute 28 is admitted (above 25) and extends it. Settling by the newest event alone
    # (no delay) would emit u1's session in batch 0 and then a second one at 28.
    land = tmp_path / "land" / "clickstream"
    write_lines(land, "a.json", [click("a1", "u1", 0), click("c1", "u3", 35)])
    write_lines(land, "b.json", [click("a2", "u1", 28), click("z1", "u9", 200)])
    spec = job_spec("sessions", tmp_path, max_files_per_trigger=1)
    run_job(
        job_spec(
            "sessions", tmp_path, max_files_per_trigger=1, params={**spec.params, "buckets": 1}
        ),
        spark=spark,
    )
    got = rows(spark, str(tmp_path / "out"), ["user_id", "session_start"])
    assert [(r[0], r[2], r[3], r[4]) for r in got] == [
        ("u1", ts(0), ts(28), 2),
        ("u3", ts(35), ts(35), 1),
    ]  # u9's session is still open


def test_fraud_alerts(spark, tmp_path):
    def auth(eid, user, minute, etype="LOGIN_FAILED", ip="10.0.0.1"):
        return {
            "event_id": eid,
            "user_id": user,
            "event_type": etype,
            "ip": ip,
            "event_time": at(minute),
        }

    write_lines(
        tmp_path / "land" / "auth",
        "a.json",
        [
            *[
                auth(f"a{i}", "u1", i, ip=f"10.0.0.{i % 3}") for i in range(6)
            ],  # 5th failure at minute 4
            *[auth(f"b{i}", "u2", i) for i in range(4)],
            auth("b9", "u2", 4, "LOGIN_SUCCESS"),
            auth("b10", "u2", 5),
            *[auth(f"c{i}", "u3", i) for i in range(4)],
            auth("c9", "u3", 15),  # gap 11 min: reset
            auth("z", "u9", 100, "LOGIN_SUCCESS"),
        ],
    )
    run_job(job_spec("fraud_alerts", tmp_path), spark=spark)
    assert rows(spark, str(tmp_path / "out")) == [
        ("u1", ts(4), ts(0), 5, 3, ["10.0.0.0", "10.0.0.1", "10.0.0.2"])
    ]


def test_service_health_event_time_with_initial_state(spark, tmp_path):
    from dataclasses import replace

    known = tmp_path / "known"
    spark.createDataFrame(
        [("svc-old", "ok", ts(-60)), ("svc-b", "stale", ts(-30))],
        "service string, status string, last_seen timestamp",
    ).write.format("delta").save(str(known))

    def log(svc, minute):
        return {"service": svc, "level": "INFO", "message": "m", "event_time": at(minute)}

    write_lines(
        tmp_path / "land" / "service-logs",
        "a.json",
        [
            log("svc-a", 0),
            log("svc-a", 2),
            log("svc-a", 12),
            log("svc-a", 13),  # silent 2..12
            log("svc-b", 1),  # known stale: ok
            log("svc-c", 0),
            log("svc-c", 30),
        ],
    )
    spec = job_spec("service_health", tmp_path)
    spec = replace(spec, params={**spec.params, "initial_state": str(known)})
    run_job(spec, spark=spark)
    assert rows(spark, str(tmp_path / "out"), ["service", "alert_time"]) == [
        ("svc-a", "stale", ts(7), ts(2)),
        ("svc-a", "ok", ts(12), ts(12)),
        ("svc-a", "stale", ts(18), ts(13)),  # watermark 29 passed 13 + 5
        ("svc-b", "ok", ts(1), ts(1)),
        ("svc-b", "stale", ts(6), ts(1)),
        ("svc-c", "stale", ts(5), ts(0)),
        # svc-c's log at 30 is held: the watermark (29) has not passed it, so a log from
        # before 30 could still arrive and come first; it acts in a later run
        ("svc-old", "stale", ts(-55), ts(-60)),  # known, silent since before the run
    ]


def test_user_counts_upsert_one_row_per_user(spark, tmp_path):
    land = tmp_path / "land" / "clickstream"
    write_lines(
        land, "a.json", [click("1", "u1", 0), click("2", "u1", 5, "purchase"), click("3", "u2", 1)]
    )
    spec = job_spec("user_counts", tmp_path)
    run_job(spec, spark=spark)
    write_lines(land, "b.json", [click("4", "u1", 9, "purchase"), click("5", "u3", 8)])
    run_job(spec, spark=spark)
    assert rows(spark, str(tmp_path / "out")) == [
        ("u1", 3, 2, ts(9)),
        ("u2", 1, 0, ts(1)),
        ("u3", 1, 0, ts(8)),
    ]


def test_windowed_counts(spark, tmp_path):
    write_lines(
        tmp_path / "land" / "clickstream",
        "a.json",
        [
            click("1", "u1", 0),
            click("2", "u2", 59, "click"),
            click("3", "u1", 30),
            click("4", "u1", 61),
            click("5", "u1", 200),  # watermark 190: closes 12:00-13:00 and 13:00-14:00
        ],
    )
    run_job(job_spec("windowed_counts", tmp_path), spark=spark)
    assert rows(spark, str(tmp_path / "out")) == [
        (ts(0), ts(60), "click", 1),
        (ts(0), ts(60), "page_view", 2),
        (ts(60), ts(120), "page_view", 1),
    ]


def test_dedup_events(spark, tmp_path):
    land = tmp_path / "land" / "clickstream"
    write_lines(land, "a.json", [click("1", "u1", 0), click("1", "u1", 0), click("2", "u1", 1)])
    spec = job_spec("dedup_events", tmp_path)
    run_job(spec, spark=spark)
    write_lines(
        land, "b.json", [click("2", "u1", 1), click("3", "u2", 2)]
    )  # re-sent in a later batch
    run_job(spec, spark=spark)
    assert [r[0] for r in rows(spark, str(tmp_path / "out"), ["event_id"])] == ["1", "2", "3"]


def test_order_payments(spark, tmp_path):
    def order(oid, minute, amount=10.5):
        return {"order_id": oid, "user_id": "u", "amount": amount, "event_time": at(minute)}

    def pay(pid, oid, minute):
        return {"payment_id": pid, "order_id": oid, "amount": 10.5, "event_time": at(minute)}

    write_lines(
        tmp_path / "land" / "orders",
        "a.json",
        [order("o1", 0), order("o2", 0), order("o3", 0), order("o9", 300)],
    )
    write_lines(
        tmp_path / "land" / "payments",
        "a.json",
        [pay("p1", "o1", 30), pay("p3", "o3", 70), pay("p9", "o9", 301)],
    )
    run_job(job_spec("order_payments", tmp_path), spark=spark)
    got = [
        (r[0], r[3], r[8] if len(r) > 8 else r[-1])
        for r in rows(spark, str(tmp_path / "out"), ["order_id"])
    ]
    assert got == [("o1", "p1", True), ("o2", None, False), ("o3", None, False), ("o9", "p9", True)]
