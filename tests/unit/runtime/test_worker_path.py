"""The workers' import path drops Spark's zips only where they repeat the installed pyspark."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from spark_jobs.runtime import worker_path

pytestmark = pytest.mark.unit

PY4J = "0.10.9.9"


def _site(tmp_path: Path, py4j_version: str | None = PY4J) -> Path:
    """A site-packages with pyspark installed by pip: the package, its zips and a jar."""
    site = tmp_path / "site-packages"
    package = site / "pyspark"
    (package / "python" / "lib").mkdir(parents=True)
    (package / "jars").mkdir()
    (package / "__init__.py").write_text("")
    for name in ("pyspark.zip", f"py4j-{PY4J}-src.zip"):
        (package / "python" / "lib" / name).write_bytes(b"")
    (package / "jars" / "spark-core_2.13-4.2.0.jar").write_bytes(b"")
    if py4j_version is not None:
        (site / "py4j").mkdir()
        (site / "py4j" / "__init__.py").write_text("")
        (site / f"py4j-{py4j_version}.dist-info").mkdir()
    return site


def _spark_path(site: Path) -> list[str]:
    """A worker's sys.path as Spark sets it: the zips and the jar first, site-packages last."""
    lib = site / "pyspark" / "python" / "lib"
    return [
        "/work",
        str(lib / "pyspark.zip"),
        str(lib / f"py4j-{PY4J}-src.zip"),
        str(site / "pyspark" / "jars" / "spark-core_2.13-4.2.0.jar"),
        "/usr/lib/python311.zip",
        str(site),
    ]


def test_drops_the_installed_packages_own_zips_and_jar(tmp_path: Path) -> None:
    site = _site(tmp_path)
    path = _spark_path(site)
    sys.path_importer_cache[path[1]] = None  # an importer Python made for the zip is forgotten
    dropped = worker_path.prefer_installed(path)
    assert path == ["/work", "/usr/lib/python311.zip", str(site)]
    assert len(dropped) == 3
    assert dropped[0] not in sys.path_importer_cache


def test_keeps_the_py4j_zip_when_the_installed_py4j_is_another_version(tmp_path: Path) -> None:
    site = _site(tmp_path, py4j_version="0.10.9.7")
    path = _spark_path(site)
    worker_path.prefer_installed(path)
    assert [Path(p).name for p in path] == [
        "work",
        f"py4j-{PY4J}-src.zip",
        "python311.zip",
        site.name,
    ]


def test_keeps_the_py4j_zip_when_py4j_is_not_installed(tmp_path: Path) -> None:
    site = _site(tmp_path, py4j_version=None)
    path = _spark_path(site)
    worker_path.prefer_installed(path)
    assert f"py4j-{PY4J}-src.zip" in [Path(p).name for p in path]
    assert "pyspark.zip" not in [Path(p).name for p in path]


def test_keeps_everything_when_the_package_is_not_on_the_path(tmp_path: Path) -> None:
    site = _site(tmp_path)
    path = _spark_path(site)[:-1]  # pyspark only in the zips: they are all the worker has
    before = list(path)
    assert worker_path.prefer_installed(path) == []
    assert path == before


def test_keeps_a_spark_home_outside_any_package(tmp_path: Path) -> None:
    home = tmp_path / "spark-4.2.0"
    (home / "python" / "lib").mkdir(parents=True)
    path = [str(home / "python" / "lib" / "pyspark.zip"), str(_site(tmp_path))]
    before = list(path)
    worker_path.prefer_installed(path)
    assert path == before
