"""The Python workers' import path: pyspark from the installed package, not from Spark's zips.

Spark starts its Python workers with ``PYTHONPATH`` = ``<pyspark>/python/lib/pyspark.zip``, the
py4j source zip and the ``spark-core`` jar, ahead of everything else. Where pyspark was installed
with pip (as here), the same pyspark, compiled, also sits in site-packages, but the zips come
first, and that costs every worker twice:

- The zips hold sources only (no compiled files can be cached in them), so every worker compiles
  ``pyspark.worker``, ``pyspark.sql`` and the rest from source when it starts. A worker's imports
  (pyspark's worker and serializers, pandas, pyarrow, a job's modules) took 0.84 s from the zips
  and 0.38 s from site-packages (3 runs each, within 4 ms of each other).
- pyspark's worker calls ``importlib.invalidate_caches()`` before **every task** (for files a job
  may add), and a ``zipimporter`` answers it by reading its archive's directory again: 81 ms a
  task with these three on the path (the jar alone has thousands of entries), 0 ms without.

:func:`prefer_installed` removes those entries when they are the installed package's own copies:
the zip lies in that package, the package is importable from another entry, and (for py4j) the
installed py4j is the zip's version. A Spark installed elsewhere (``SPARK_HOME`` without an
importable package) keeps its zips, which are then the only pyspark the workers have.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

_PY4J_ZIP = re.compile(r"py4j-(?P<version>[^-]+)-src\.zip")


def _installed_package(entry: Path, path: list[str]) -> Path | None:
    """The pyspark package directory ``entry`` lies in, if that package can be imported from
    another entry of ``path`` (``<site-packages>/pyspark`` with its ``__init__.py``)."""
    for folder in entry.parents:
        if folder.name == "pyspark" and (folder / "__init__.py").is_file():
            return folder if str(folder.parent) in path else None
    return None


def _redundant(entry: str, path: list[str]) -> bool:
    """Whether ``entry`` is a copy of what ``path`` imports anyway from the installed package."""
    where = Path(entry)
    if where.suffix not in (".zip", ".jar"):
        return False
    package = _installed_package(where, path)
    if package is None:
        return False
    py4j = _PY4J_ZIP.fullmatch(where.name)
    if py4j is None:  # pyspark.zip, or a jar of the package (there for pyspark-in-a-jar set-ups)
        return True
    site = package.parent
    installed = site / f"py4j-{py4j['version']}.dist-info"
    return (site / "py4j" / "__init__.py").is_file() and installed.is_dir()


def prefer_installed(path: list[str] | None = None) -> list[str]:
    """Drop from ``path`` (default ``sys.path``, changed in place) the zips and jars that repeat
    the installed pyspark and py4j, and forget their cached importers; the entries dropped."""
    path = sys.path if path is None else path
    dropped = [entry for entry in path if _redundant(entry, path)]
    for entry in dropped:
        path.remove(entry)
        sys.path_importer_cache.pop(entry, None)
    return dropped
