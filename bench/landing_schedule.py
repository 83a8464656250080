"""When the freshness bench (:mod:`bench.freshness`) lands each marker."""

from __future__ import annotations

# The golden ratio's fraction: n * PHI mod 1 spreads any number of markers evenly over [0, 1).
PHI = (5**0.5 - 1) / 2


def landing_offsets(total: int, every: float, trigger: float) -> list[float]:
    """When marker ``n`` lands, in seconds after the first timed one: ``n * every`` plus a
    phase in the trigger period that differs from marker to marker, spread evenly over it.

    Spark starts a processing-time batch at whole multiples of its interval on the wall clock.
    Markers landed exactly every 2 s all fell at one point of that 1 s period, so every marker
    of a run waited the same part of a second for its batch to start: which part depended on
    when the run began, and moved a contender's p50 by up to a trigger interval from run to
    run. A file lands at any moment of the period in real life, so the markers do too."""
    spread = min(every, trigger)
    return [n * every + (n * PHI % 1.0) * spread for n in range(total)]
