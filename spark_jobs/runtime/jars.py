"""Delta's jars, fetched once from Maven Central into ``./.cache`` so runs start offline.

``python -m spark_jobs.runtime.jars fetch`` (run by ``make setup``) lets Spark's own Ivy resolve
the coordinates in ``include/spark/jars.txt`` into ``.cache/ivy``, then copies just those
artifacts to ``.cache/jars``. Only they go on ``spark.jars``: Ivy also resolves Hadoop, Jackson and
Parquet jars that would shadow the ones Spark ships.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from spark_jobs.errors import UserError
from spark_jobs.runtime import paths


def coordinates() -> list[str]:
    path = paths.project_root() / "include" / "spark" / "jars.txt"
    lines = [ln.split("#", 1)[0].strip() for ln in path.read_text().splitlines()]
    return [ln for ln in lines if ln]


def _jar_name(coord: str) -> str:
    _group, artifact, version = coord.split(":")
    return f"{artifact}-{version}.jar"


def jar_paths() -> list[str]:
    """The cached jars for ``spark.jars``; a one-line error when set-up has not fetched them."""
    out = []
    for coord in coordinates():
        p = paths.jars_dir() / _jar_name(coord)
        if not p.is_file():
            raise UserError(f"Delta jar {p.name} is not in {paths.jars_dir()}; run `make setup`")
        out.append(str(p))
    return out


def fetch() -> list[Path]:
    """Resolve with Ivy (network, once) and copy the named jars into the cache."""
    from pyspark.sql import SparkSession

    coords = coordinates()
    paths.jars_dir().mkdir(parents=True, exist_ok=True)
    wanted = {c: paths.jars_dir() / _jar_name(c) for c in coords}
    if all(p.is_file() for p in wanted.values()):
        return list(wanted.values())
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("statekeeper-fetch-jars")
        .config("spark.jars.packages", ",".join(coords))
        .config("spark.jars.ivy", str(paths.ivy_dir()))
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.stop()
    ivy_jars = paths.ivy_dir() / "jars"
    for coord, dest in wanted.items():
        group, artifact, version = coord.split(":")
        src = ivy_jars / f"{group}_{artifact}-{version}.jar"
        if not src.is_file():
            raise UserError(
                f"Ivy did not resolve {coord} into {ivy_jars}; is Maven Central reachable?"
            )
        shutil.copy2(src, dest)
    return list(wanted.values())


if __name__ == "__main__":
    if sys.argv[1:] != ["fetch"]:
        sys.exit("usage: python -m spark_jobs.runtime.jars fetch")
    for p in fetch():
        print(f"cached {p}")
