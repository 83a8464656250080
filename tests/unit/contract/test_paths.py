"""The one path resolver and the roots live in a module that imports neither Spark nor Airflow,
so the Airflow plugin and the spec loader share it."""

from __future__ import annotations

import re

import pytest
from fresh_imports import packages_after

from spark_jobs.contract import paths

pytestmark = pytest.mark.unit


def test_the_resolver_module_pulls_in_neither_spark_nor_airflow():
    loaded = packages_after(
        "from spark_jobs.contract.paths import resolve, roots, outside_roots\n"
        "from spark_jobs.contract.spec import load_spec\n"
    )
    assert not {"pyspark", "py4j", "airflow", "delta"} & set(loaded), sorted(loaded)


def test_data_paths_follow_statekeeper_data_and_roots_refuse_escapes(tmp_path, monkeypatch):
    monkeypatch.setenv("STATEKEEPER_DATA", str(tmp_path / "data"))
    monkeypatch.delenv("STATEKEEPER_CHECKPOINT_ROOTS", raising=False)
    assert paths.resolve(".data/checkpoints/x") == str(tmp_path / "data" / "checkpoints" / "x")
    assert paths.resolve("s3a://bucket/ck/") == "s3a://bucket/ck"
    assert paths.outside_roots(".data/checkpoints/x", "checkpoints") is None
    assert "outside the checkpoints roots" in paths.outside_roots(
        ".data/checkpoints/../x", "checkpoints"
    )
    (tmp_path / "data" / "checkpoints").mkdir(parents=True)
    (tmp_path / "data" / "checkpoints" / "link").symlink_to(tmp_path)  # a symlink out is refused
    assert paths.outside_roots(".data/checkpoints/link/x", "checkpoints") is not None
    assert paths.outside_roots("s3a://b/ck", "checkpoints") is not None  # until configured
    monkeypatch.setenv("STATEKEEPER_CHECKPOINT_ROOTS", "s3a://b/ck")
    assert paths.outside_roots("s3a://b/ck/sessions", "checkpoints") is None
    assert paths.outside_roots("s3a://b/ck/../other/x", "checkpoints") is not None


def test_a_root_itself_is_refused_as_a_root_not_as_outside(tmp_path, monkeypatch):
    monkeypatch.setenv("STATEKEEPER_CHECKPOINT_ROOTS", str(tmp_path / "ck"))
    why = paths.outside_roots(str(tmp_path / "ck"), "checkpoints")
    assert why is not None and "is a checkpoints root itself" in why, why
    assert "outside" not in why
    assert paths.outside_roots(str(tmp_path / "ck"), "checkpoints", allow_root=True) is None
    assert paths.outside_roots(str(tmp_path / "ck" / "sessions"), "checkpoints") is None


@pytest.mark.parametrize(
    ("name", "read"),
    [
        ("events-0001.json", True),
        ("events.json.gz", True),
        ("events.JSON", False),  # the file source's glob is case-sensitive
        ("events.ndjson", False),
        ("readme.txt", False),
        (".events.json.tmp", False),  # generate's temp file, renamed into place when whole
        ("_SUCCESS.json", False),
    ],
)
def test_landing_file_is_the_file_sources_rule(name: str, read: bool):
    assert paths.landing_file(name) is read


def test_a_landing_name_with_a_character_spark_cannot_read_is_no_landing_file():
    """The Python checks of what a run reads and the JVM's listing filter refuse the same names."""
    from spark_jobs.contract import jvm

    java = (paths.project_root() / jvm.NAME_FILTER_SOURCE).read_text()
    (declared,) = re.findall(r'static final String REFUSED = "((?:[^"\\]|\\.)*)";', java)
    assert declared.encode().decode("unicode_escape") == paths.UNREADABLE_NAME_CHARS
    assert paths.landing_file("clicks-2026-11-29.json")
    assert paths.landing_file("with space %41 ünï.json.gz")
    for name in ("b[1].json", "c{2}.json", "q?.json", "a*.json", "a\\b.json", "t10:00Z.json"):
        assert not paths.landing_file(name), name
