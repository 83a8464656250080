"""The batched executor's settling horizon (spark_jobs.jobs.keyed.settled_until_ms): what a
call's own events prove about Spark's next watermark."""

from types import SimpleNamespace

import numpy as np
import pytest

from spark_jobs.jobs import keyed

pytestmark = pytest.mark.unit

MIN = 60_000


def test_a_call_without_events_settles_at_sparks_watermark():
    assert keyed.settled_until_ms(5 * MIN, np.array([], dtype=np.int64), 10 * MIN) == 5 * MIN


def test_the_newest_event_minus_the_delay_when_it_is_ahead():
    events = np.array([200 * MIN, 30 * MIN, 199 * MIN], dtype=np.int64)
    assert keyed.settled_until_ms(0, events, 10 * MIN) == 190 * MIN


def test_never_behind_sparks_watermark():
    # events just above the watermark (admitted) cannot move the horizon back
    events = np.array([101 * MIN], dtype=np.int64)
    assert keyed.settled_until_ms(100 * MIN, events, 10 * MIN) == 100 * MIN


@pytest.mark.parametrize(
    ("seconds", "ms"), [(600, 600_000), (0.0015, 2), (1.2345, 1235), (0.1, 100), (0, 0)]
)
def test_the_delay_is_never_below_the_one_spark_applies(seconds, ms):
    # Spark truncates a fraction of a millisecond; rounding up only settles less
    assert keyed.delay_ms(SimpleNamespace(watermark_seconds=seconds)) == ms
