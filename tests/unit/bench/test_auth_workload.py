"""The fraud benchmark's auth workload: what fraud detection sees (no JVM)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from bench import auth_workload
from spark_jobs.state import fraud

pytestmark = pytest.mark.unit


def test_mostly_successes_and_failures_from_few_accounts():
    evs = auth_workload.events(20_000, 2_000)
    assert evs == auth_workload.events(20_000, 2_000)  # deterministic for a seed
    kinds = Counter(e[3] for e in evs)
    assert set(kinds) == {fraud.FAILED, fraud.SUCCESS} and len(evs) == 20_000
    assert 0.85 < kinds[fraud.SUCCESS] / len(evs) < 0.95
    failures = Counter(e[2] for e in evs if e[3] == fraud.FAILED)
    top = sum(n for _, n in failures.most_common(int(2_000 * auth_workload.VICTIM_SHARE)))
    assert top >= len(evs) * auth_workload.ATTACK_SHARE  # the brute force hits the victims
    span = max(e[0] for e in evs) - min(e[0] for e in evs)
    assert span >= auth_workload.SPAN * 0.99


def test_files_are_lines_of_the_auth_kind(tmp_path):
    folder = auth_workload.dataset(tmp_path, 1_000, 100)
    lines = (folder / "auth-000.json").read_text().splitlines()
    assert len(lines) == 1_000 and (folder / ".complete").exists()
    assert set(json.loads(lines[0])) == {"event_id", "user_id", "event_type", "ip", "event_time"}
    assert auth_workload.dataset(tmp_path, 1_000, 100) == folder  # made once
