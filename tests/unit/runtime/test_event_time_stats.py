"""A batch record's event-time figures, put back from the good events' observed ones."""

import pytest

from spark_jobs.runtime.event_time_stats import METRIC_PREFIX, restore, spark_time

T = 1_773_576_000_000  # 2026-03-15T12:00:00Z in ms

pytestmark = pytest.mark.unit


def test_spark_time_is_sparks_format():
    assert spark_time(T) == "2026-03-15T12:00:00.000Z"
    assert spark_time(T + 228) == "2026-03-15T12:00:00.228Z"


def test_the_observed_figures_replace_the_watermark_nodes():
    record = {
        # what Spark reports when two bad lines (counted as epoch 0) passed the watermark node
        "eventTime": {"max": spark_time(T + 9000), "min": spark_time(0), "avg": spark_time(9)},
        "observedMetrics": {
            METRIC_PREFIX + "orders": {"max": T + 9000, "min": T, "avg": T + 1000.0, "count": 3},
            METRIC_PREFIX + "payments": {"max": T + 50, "min": T - 60, "avg": T - 5.0, "count": 1},
            "users_metric": {"n": 4},
        },
    }
    record["eventTime"]["watermark"] = spark_time(T - 600_000)
    restore(record)
    assert record["eventTime"] == {
        "watermark": spark_time(T - 600_000),
        "max": spark_time(T + 9000),
        "min": spark_time(T - 60),
        "avg": spark_time(T + (3 * 1000 - 5) // 4),  # weighted by count
    }
    assert record["observedMetrics"] == {"users_metric": {"n": 4}}  # a user's own metric stays


def test_a_batch_without_good_events_reports_none():
    record = {
        "eventTime": {"max": spark_time(0), "min": spark_time(0), "avg": spark_time(0)},
        "observedMetrics": {
            METRIC_PREFIX + "k": {"max": None, "min": None, "avg": None, "count": 0}
        },
    }
    restore(record)
    assert record == {"eventTime": {}}


def test_a_record_without_the_metrics_is_left_alone():
    record = {"eventTime": {"max": spark_time(T)}, "observedMetrics": {"other": {"n": 1}}}
    restore(record)
    assert record == {"eventTime": {"max": spark_time(T)}, "observedMetrics": {"other": {"n": 1}}}


def test_a_query_without_a_watermark_gets_no_event_time():
    """The parse observes every kind's lines; Spark reports no event time without a watermark."""
    record = {
        "eventTime": {},
        "observedMetrics": {METRIC_PREFIX + "k": {"max": T, "min": T, "avg": float(T), "count": 1}},
    }
    restore(record)
    assert record == {"eventTime": {}}
    record = {"observedMetrics": {METRIC_PREFIX + "k": {"max": T, "min": T, "avg": T, "count": 1}}}
    restore(record)
    assert record == {}
