"""One migrated Airflow metadata DB (SQLite) per session for the DAG tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from airflow_env import migrate  # noqa: E402


@pytest.fixture(scope="session")
def airflow_home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("airflow_home")
    migrate(home)
    return home
