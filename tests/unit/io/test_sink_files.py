"""How many files the batch writer's append makes (spark_jobs.io.sinks.files_for): one for a
small batch, then one per MIN_ROWS_PER_FILE rows, never more than one per core."""

import pytest

from spark_jobs.io import sinks

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("rows", "cores", "files"),
    [
        (0, 2, 1),  # an empty write that only creates the table still writes through one task
        (1, 2, 1),
        (sinks.MIN_ROWS_PER_FILE, 2, 1),
        (sinks.MIN_ROWS_PER_FILE + 1, 2, 2),
        (10_000_000, 2, 2),
        (10_000_000, 8, 8),
        (3 * sinks.MIN_ROWS_PER_FILE, 8, 3),
    ],
)
def test_an_append_writes_one_file_per_min_rows_up_to_one_per_core(rows, cores, files):
    assert sinks.files_for(rows, cores) == files
