"""A quality run's id is its GX run name, which GX's Data Docs renderer parses as a date."""

from __future__ import annotations

from datetime import datetime

import pytest

from spark_jobs.quality import gx_run

pytestmark = pytest.mark.unit

RUN_TIME = datetime(2026, 11, 26, 16, 21, 47, 107448)


def _page_title(name: str) -> str:
    from great_expectations.core.run_identifier import RunIdentifier
    from great_expectations.render.renderer.page_renderer import ValidationResultsPageRenderer

    run_time = RunIdentifier(run_name=name, run_time=RUN_TIME).to_tuple()[1]
    return ValidationResultsPageRenderer()._determine_page_title(name, run_time, "", "sessions")


# '7754ad' is the suffix a CI run drew: with a hyphen, dateutil read '-7754' as a UTC offset of
# -77:54 ('ad' as the era) and the page of that run was never written.
@pytest.mark.parametrize("suffix", ["7754ad", "8007ad", "0000bc", "485307", "abcdef"])
def test_every_run_name_renders_a_page_title(suffix):
    name = gx_run.run_name(RUN_TIME, suffix)
    assert name == f"20261126T162147_{suffix}"
    assert name in _page_title(name)


def test_random_run_names_render():
    for _ in range(2000):
        name = gx_run.run_name(RUN_TIME)
        assert name in _page_title(name), name
    assert len({gx_run.run_name(RUN_TIME) for _ in range(50)}) == 50
