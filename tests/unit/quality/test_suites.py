"""Suites as files: every output table has one, its named checks expand from the job's declaration
and spec, and a mistake in a suite file is a one-line UserError."""

from __future__ import annotations

from datetime import datetime

import pytest

from spark_jobs.contract.errors import UserError
from spark_jobs.contract.spec import list_jobs, load_spec
from spark_jobs.jobs import definition
from spark_jobs.quality import results
from spark_jobs.quality.suites import (
    QUARANTINE,
    TABLE,
    column_types,
    load_suite,
    parse_suite,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("job", list_jobs())
def test_every_job_has_a_suite_with_severities_and_the_core_checks(job):
    suite = load_suite(load_spec(job))
    assert {c.severity for c in suite.checks} <= {"warn", "fail"}
    macros = {c.macro for c in suite.checks}
    assert {"schema", "keys", "freshness", "volume", "quarantine_rate"} <= macros
    cols = [
        c for c in suite.checks if c.expectation == "expect_table_columns_to_match_ordered_list"
    ]
    assert cols[0].kwargs["column_list"] == list(column_types(job))
    key_checks = [c for c in suite.checks if c.macro == "keys"]
    assert len(key_checks) == len(definition(job).keys) + 1  # not null each, unique once
    assert suite.for_target(QUARANTINE) and suite.for_target(TABLE)


def test_column_types_follow_the_ddl():
    assert column_types("order_payments")["amount"] == "DecimalType"
    assert column_types("sessions")["last_pages"] == "ArrayType"
    assert column_types("sessions")["events"] == "LongType"
    assert list(column_types("order_payments")) == definition("order_payments").columns


def test_keys_expand_to_compound_unique_for_two_columns():
    suite = load_suite(load_spec("windowed_counts"))
    unique = [c for c in suite.checks if c.label.startswith("keys:") and "unique" in c.label]
    assert unique[0].expectation == "expect_compound_columns_to_be_unique"
    assert unique[0].kwargs["column_list"] == ["window_start", "event_type"]


def test_spec_values_are_substituted_not_written_twice():
    spec = load_spec("fraud_alerts")
    suite = load_suite(spec)
    attempts = next(c for c in suite.checks if c.label == "failed_attempts == threshold")
    assert attempts.kwargs["value_set"] == [spec.params["threshold"]] == [5]
    assert attempts.severity == "fail" and attempts.gx_severity == "critical"


@pytest.mark.parametrize(
    "checks, message",
    [
        ([{"check": "keys"}], "needs severity warn or fail"),
        ([{"check": "keys", "severity": "error"}], "needs severity warn or fail"),
        ([{"check": "nonsense", "severity": "warn"}], "unknown check 'nonsense'"),
        ([{"expect": "column_values", "severity": "warn"}], "not an expect_... name"),
        ([{"severity": "warn"}], "needs 'expect:' or 'check:'"),
        ([{"check": "volume", "severity": "warn", "ratio": 2}], "volume takes"),
        ([{"expect": "expect_x", "v": "${params.nope}", "severity": "warn"}], "is not set in"),
        (
            [{"check": "keys", "severity": "warn"}, {"check": "keys", "severity": "fail"}],
            "repeated",
        ),
    ],
)
def test_suite_mistakes_are_one_line_user_errors(checks, message):
    with pytest.raises(UserError, match=message) as err:
        parse_suite({"table": "sessions", "checks": checks}, load_spec("sessions"), "x.yaml")
    assert "\n" not in str(err.value) and err.value.exit_code == 2


def test_suite_for_another_table_is_refused():
    with pytest.raises(UserError, match="is for table"):
        parse_suite({"table": "fraud_alerts", "checks": []}, load_spec("sessions"), "x.yaml")


def test_volume_bounds_from_trailing_median():
    opts = {"trailing_runs": 5, "min_runs": 2, "min_ratio": 0.2, "max_ratio": 5.0}
    assert results.volume_bounds([100], opts) == (0, None)  # no history yet: no bound
    assert results.volume_bounds([100, 120, 80], opts) == (20, 500)


def test_status_and_observed_formatting():
    assert results.status_of(True, "fail") == "pass"
    assert results.status_of(False, "warn") == "warn"
    assert results.status_of(False, "fail") == "fail"
    assert results.format_observed(datetime(2026, 3, 1, 10)) == "2026-03-01 10:00:00"
    assert results.format_observed(list(range(100))).endswith("...")


def test_samples_are_opt_in_and_validated():
    spec = load_spec("sessions")
    assert load_suite(spec).samples == 0
    assert parse_suite({"samples": 5, "checks": []}, spec, "x.yaml").samples == 5
    with pytest.raises(UserError, match="samples must be"):
        parse_suite({"samples": -1, "checks": []}, spec, "x.yaml")
