"""Quality suites on real Delta tables with Great Expectations 1.x.

Each output table gets clean rows (version 0: every check passes) and then a version with
deliberately injected defects: the incremental run reads only that version and reports each defect
under the right expectation with the right severity, and nothing else.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from spark_jobs.contract import paths
from spark_jobs.contract.blocks import Quality
from spark_jobs.contract.spec import load_spec
from spark_jobs.io.tables import QUARANTINE
from spark_jobs.jobs import definition
from spark_jobs.quality import results
from spark_jobs.quality.runner import run_quality

pytestmark = pytest.mark.integration

T = datetime(2026, 3, 1, 10, 0)


def minutes(m: float) -> datetime:
    return T + timedelta(minutes=m)


def clean_row(job: str, i: int) -> dict:
    """Row ``i`` of a table, consistent with the job's contract."""
    if job == "sessions":
        return dict(
            user_id=f"u{i % 7}",
            session_id=f"s{i}",
            session_start=minutes(i),
            session_end=minutes(i + 5),
            events=3,
            page_views=2,
            total_duration_sec=40,
            last_pages=["/a", "/b"],
            purchased=False,
            checkout_viewed=i % 2 == 0,
        )
    if job == "fraud_alerts":
        return dict(
            user_id=f"u{i}",
            alert_time=minutes(i + 4),
            first_failure_time=minutes(i),
            failed_attempts=5,
            distinct_ips=2,
            ips=["10.0.0.1", "10.0.0.2"],
        )
    if job == "service_health":
        return dict(
            service=f"svc{i}",
            status="stale" if i % 2 else "ok",
            alert_time=minutes(i + 5),
            last_seen=minutes(i),
        )
    if job == "user_counts":
        return dict(user_id=f"u{i}", total_events=10, purchases=1, last_event_time=minutes(i))
    if job == "windowed_counts":
        return dict(
            window_start=minutes(60 * i),
            window_end=minutes(60 * i + 60),
            event_type="page_view",
            count=12,
        )
    if job == "dedup_events":
        return dict(
            event_id=f"e{i}",
            user_id=f"u{i % 5}",
            event_type="page_view",
            page="/a",
            duration_sec=3,
            event_time=minutes(i),
        )
    if job == "order_payments":
        return dict(
            order_id=f"o{i}",
            user_id=f"u{i}",
            order_time=minutes(i),
            payment_id=f"p{i}",
            payment_time=minutes(i + 3),
            amount=Decimal("12.50"),
            payment_amount=Decimal("12.50"),
            matched=True,
        )
    raise KeyError(job)


# job -> (defective rows for version 1, the findings expected: {check label: status}).
DEFECTS = {
    "sessions": (
        [
            dict(session_id="s3"),
            dict(session_id=None),
            dict(session_end=minutes(-10)),
            dict(page_views=9),
            dict(total_duration_sec=-5),
        ],
        {
            "keys: session_id unique": "fail",
            "keys: session_id not null": "fail",
            "session_end >= session_start": "fail",
            "page_views <= events": "fail",
            "total_duration_sec >= 0": "warn",
        },
    ),
    "fraud_alerts": (
        [dict(failed_attempts=4), dict(user_id=None), dict(distinct_ips=0)],
        {
            "failed_attempts == threshold": "fail",
            "keys: user_id not null": "fail",
            "1 <= distinct_ips <= threshold": "fail",
        },
    ),
    "service_health": (
        [dict(status="down"), dict(alert_time=minutes(-30))],
        {"status in {stale, ok}": "fail", "alert_time >= last_seen": "warn"},
    ),
    "user_counts": (
        [dict(user_id="u2", total_events=11), dict(purchases=50)],
        {"keys: user_id unique": "fail", "purchases <= total_events": "fail"},
    ),
    "windowed_counts": (
        [dict(window_start=minutes(0), window_end=minutes(60)), dict(count=0)],
        {"keys: (window_start, event_type) unique": "fail", "count >= 1": "fail"},
    ),
    "dedup_events": (
        [dict(event_id="e1"), dict(duration_sec=-1)],  # e1: written again by a later run
        {"keys: event_id unique": "fail", "duration_sec >= 0": "warn"},
    ),
    "order_payments": (
        [dict(payment_time=minutes(-60)), dict(amount=Decimal("-3.00")), dict(order_id="o0")],
        {
            "payment_time >= order_time": "fail",
            "amount >= 0": "warn",
            "keys: order_id unique": "fail",
        },
    ),
}


def write(spark, job: str, uri: Path, rows: list[dict], mode: str = "append") -> None:
    cols = list(clean_row(job, 0))
    data = [tuple(r[c] for c in cols) for r in rows]
    spark.createDataFrame(data, schema=definition(job).schema).write.format("delta").mode(
        mode
    ).save(str(uri))


def quarantine(spark, out: Path, n: int) -> None:
    rows = [
        (f"not json {i}", "invalid JSON", "f.json", datetime.now(), "job", "kind") for i in range(n)
    ]
    spark.createDataFrame(rows, schema=QUARANTINE).write.format("delta").mode("append").save(
        str(out / "_quarantine")
    )


def log_progress(checkpoint: Path, read: int, watermark: datetime) -> None:
    """One progress record, as the job's listener appends it to ``_statekeeper/progress.jsonl``."""
    path = checkpoint / "_statekeeper" / "progress.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    rec = {
        "numInputRows": read,
        "eventTime": {"watermark": watermark.strftime("%Y-%m-%dT%H:%M:%S.000Z")},
        "statekeeper": {"job": "test", "logged_at": time.time()},
    }
    with open(path, "a") as fh:
        fh.write(json.dumps(rec) + "\n")
    time.sleep(0.01)


def findings(result) -> dict[str, str]:
    return {r.check: r.status for r in result.rows if r.status != "pass"}


def spec_for(job: str, tmp_path: Path):
    return load_spec(job).with_overrides(
        output=str(tmp_path / job), checkpoint=str(tmp_path / "ck")
    )


@pytest.mark.parametrize("job", sorted(DEFECTS))
def test_clean_data_passes_and_each_injected_defect_is_caught(spark, tmp_path, job):
    spec = spec_for(job, tmp_path)
    out, ck = tmp_path / job, tmp_path / "ck"
    write(spark, job, out, [clean_row(job, i) for i in range(10)])
    quarantine(spark, out, 2)
    log_progress(ck, read=200, watermark=minutes(60))  # 1% quarantined; output fresh

    first = run_quality(spec, spark=spark)
    assert findings(first) == {}, first.summary()
    assert first.status == "pass" and first.exit_code == 0
    assert first.batches[0]["versions"] == "0..0" and first.batches[0]["rows"] == 10

    rows, expected = DEFECTS[job]
    write(spark, job, out, [{**clean_row(job, 20 + i), **d} for i, d in enumerate(rows)])
    log_progress(ck, read=100, watermark=minutes(60))
    second = run_quality(spec, spark=spark)
    assert findings(second) == expected, second.summary()
    assert second.exit_code == (1 if "fail" in expected.values() else 0)
    main = second.batches[0]
    assert (main["versions"], main["mode"]) == ("1..1", "incremental")
    severities = {r.check: r.severity for r in second.rows}
    assert all(severities[c] == s for c, s in expected.items())

    table = spark.read.format("delta").load(paths.results_uri(str(out)))
    assert table.select("run_id").distinct().count() == 2
    failed = {
        r["check"] for r in table.where(f"run_id = '{second.run_id}' AND NOT success").collect()
    }
    assert failed == set(expected)


def test_incremental_reads_only_new_versions_and_full_rereads_all(spark, tmp_path):
    job = "sessions"
    spec = spec_for(job, tmp_path)
    out, ck = tmp_path / job, tmp_path / "ck"
    log_progress(ck, read=50, watermark=minutes(60))
    write(spark, job, out, [clean_row(job, 0), {**clean_row(job, 1), "session_end": minutes(-1)}])
    assert findings(run_quality(spec, spark=spark)) == {"session_end >= session_start": "fail"}

    write(spark, job, out, [clean_row(job, i) for i in range(10, 17)])  # version 1: 7 clean rows
    inc = run_quality(spec, spark=spark)
    # The old defect is not read again: the batch is version 1's 7 rows.
    assert findings(inc) == {} and inc.exit_code == 0
    assert inc.batches[0] | {"uri": None} == {
        "suite": "sessions",
        "uri": None,
        "versions": "1..1",
        "mode": "incremental",
        "rows": 7,
    }

    up_to_date = run_quality(spec, spark=spark)
    assert up_to_date.rows == [] and up_to_date.status == "up to date"

    full = run_quality(spec, full=True, spark=spark)
    assert full.batches[0]["versions"] == "0..1" and full.batches[0]["rows"] == 9
    assert findings(full) == {"session_end >= session_start": "fail"}
    docs = Path(full.docs.removeprefix("file://"))
    assert docs.is_file() and (docs.parent / "validations").is_dir()
    assert (out / "_quality" / "gx").is_dir()


def test_data_docs_keep_the_last_runs_and_the_results_table_keeps_all(spark, tmp_path, monkeypatch):
    """Each run used to read every stored GX result to build the Data Docs index (+1.4 s per
    1,000 earlier runs) and left its files for ever: now the last DOCS_RUNS runs are kept."""
    from spark_jobs.quality import gx_run

    monkeypatch.setattr(gx_run, "DOCS_RUNS", 2)
    job = "sessions"
    spec = spec_for(job, tmp_path)
    out = tmp_path / job
    log_progress(tmp_path / "ck", read=50, watermark=minutes(60))
    runs = []
    for v in range(3):
        write(spark, job, out, [clean_row(job, 10 * v + i) for i in range(3)])
        runs.append(run_quality(spec, spark=spark).run_id)
    gx_results = (out / "_quality" / "gx").rglob(f"{job}/*/*/*.json")
    pages = (out / "_quality" / "docs" / "validations").rglob(f"{job}/*/*/*.html")
    # results and pages of the last two runs only, and no empty folder of the first left behind
    assert sorted(p.parent.parent.name for p in gx_results) == sorted(runs[1:])
    assert sorted(p.parent.parent.name for p in pages) == sorted(runs[1:])
    for root in (out / "_quality" / "gx", out / "_quality" / "docs"):
        assert not [d for d in root.rglob(f"{runs[0]}*")], root
    index = (out / "_quality" / "docs" / "index.html").read_text()
    assert runs[0] not in index and runs[2] in index
    table = spark.read.format("delta").load(str(out / "_quality" / "results"))
    assert {r.run_id for r in table.select("run_id").distinct().collect()} == set(runs)


def test_a_data_docs_page_gx_fails_to_render_is_reported(spark, tmp_path, monkeypatch):
    """GX logs a page it cannot render and goes on; the run says so in its note. A run name
    dateutil reads as a -77:54 UTC offset (the run id's old hyphen) is one GX fails on."""
    from spark_jobs.quality import gx_run

    monkeypatch.setattr(gx_run, "run_name", lambda t: f"{t:%Y%m%dT%H%M%S}-7754ad")
    job = "sessions"
    spec = spec_for(job, tmp_path)
    write(spark, job, tmp_path / job, [clean_row(job, i) for i in range(3)])
    log_progress(tmp_path / "ck", read=50, watermark=minutes(60))
    out = run_quality(spec, spark=spark)
    assert out.rows and out.status == "pass"  # the checks' verdict stands
    assert "Data Docs incomplete, GX could not render: ValueError: offset must be" in out.note
    assert f"note: {out.note}" in out.summary()


def test_stale_data_volume_spike_and_quarantine_spike(spark, tmp_path):
    job = "windowed_counts"
    spec = spec_for(job, tmp_path)
    out, ck = tmp_path / job, tmp_path / "ck"
    write(spark, job, out, [clean_row(job, i) for i in range(4)])
    quarantine(spark, out, 1)
    log_progress(ck, read=100, watermark=minutes(240))
    assert findings(run_quality(spec, spark=spark)) == {}
    # Trailing runs that added 4 rows each (as earlier incremental runs would have recorded).
    past = [
        results.ResultRow(
            f"old{i}",
            datetime(2026, 1, 1, i),
            job,
            str(out),
            "windowed_counts",
            0,
            0,
            "incremental",
            "volume: new rows vs trailing runs",
            "expect_table_row_count_to_be_between",
            None,
            "warn",
            True,
            "pass",
            "4",
            None,
            None,
            4,
            "",
        )
        for i in range(3)
    ]
    results.append(str(out), past)

    write(spark, job, out, [clean_row(job, i) for i in range(10, 40)])  # 30 rows: 7.5x the median
    quarantine(spark, out, 12)  # 12 bad of 100 read: 12% > 5%
    log_progress(ck, read=100, watermark=minutes(60 * 40 + 60 * 8))  # watermark 8h past the data
    res = run_quality(spec, spark=spark)
    assert findings(res) == {
        "freshness: newest window_end within 3 hours": "warn",
        "volume: new rows vs trailing runs": "warn",
        "quarantine: rate <= 0.05": "fail",
    }, res.summary()
    quar = next(r for r in res.rows if r.check.startswith("quarantine: rate"))
    assert quar.observed == "12 of 100 read (12.0%)"
    assert res.batches[1]["versions"] == "1..1"  # only the newly quarantined rows


def test_cli_prints_a_table_and_exits_1_on_fail_2_when_it_cannot_run(spark, tmp_path, capsys):
    from spark_jobs.cli import main

    job = "fraud_alerts"
    out = tmp_path / job
    write(spark, job, out, [clean_row(job, 0), {**clean_row(job, 1), "failed_attempts": 3}])
    assert main(["quality", job, "--table", str(out)]) == 1
    text = capsys.readouterr().out
    assert "failed_attempts == threshold" in text and "FAIL" in text and "result: FAIL" in text

    assert main(["quality", job, "--table", str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("statekeeper: no Delta table at") and "\n" not in err
    assert main(["quality", "no_such_job"]) == 2


def test_spec_without_thresholds_and_suite_errors_are_exit_2(spark, tmp_path):
    from spark_jobs.contract.errors import UserError

    job = "sessions"
    spec = replace(spec_for(job, tmp_path), quality=Quality())
    write(spark, job, tmp_path / job, [clean_row(job, 0)])
    with pytest.raises(UserError, match="freshness needs quality.freshness_sla") as err:
        run_quality(spec, spark=spark)
    assert err.value.exit_code == 2
