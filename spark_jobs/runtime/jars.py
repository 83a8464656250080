"""Jars fetched once from Maven Central into ``./.cache`` so runs and tests start offline.

``python -m spark_jobs.runtime.jars fetch`` (run by ``make setup``) does two things:

- Spark's jars: Spark's own Ivy resolves the coordinates in ``include/spark/jars.txt`` (Delta and
  the Kafka source) into ``.cache/ivy``, then just those artifacts are copied to ``.cache/jars``.
  Only they go on ``spark.jars``: Ivy also resolves Hadoop, Jackson and Parquet jars that would
  shadow the ones Spark ships.
- The local Kafka broker's jars: ``include/kafka/broker-jars.txt`` resolved with all their
  dependencies by Ivy's command line (the jar pyspark ships) into ``.cache/kafka-broker``. The
  broker runs in its own JVM (``kafka up``), so its Scala and Jackson never meet Spark's.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from spark_jobs.contract import paths
from spark_jobs.contract.errors import UserError
from spark_jobs.contract.jvm import (  # the pins and where the jars are: the contract's
    JarList,
    jar_name,
    read_list,
    spark_list,
)

BROKER_COMPLETE = ".complete"  # written last: a broker folder without it is a cut-off fetch
BROKER_LIST = Path("include") / "kafka" / "broker-jars.txt"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify(jar: Path, pins: JarList) -> None:
    """``jar`` has the SHA-256 pinned for it; otherwise it is deleted (never used) and one line
    says which jar, both digests and where the pin is."""
    want = pins.pins.get(jar.name)
    got = sha256(jar)
    if want == got:
        return
    jar.unlink()
    if want is None:
        raise UserError(
            f"jar {jar.name} (sha256:{got}) has no pin in {pins.path}; deleted. Add its "
            "SHA-256 there after checking it against Maven Central's published checksum"
        )
    raise UserError(
        f"jar {jar.name} has sha256:{got}, not the sha256:{want} pinned in {pins.path}; "
        "deleted (the download was altered or truncated): fetch again"
    )


def broker_list() -> JarList:
    return read_list(paths.project_root() / BROKER_LIST)


def broker_coordinates() -> list[str]:
    return broker_list().coords


def broker_classpath() -> str:
    """The local broker's classpath; a one-line error when set-up has not fetched it."""
    folder = paths.broker_jars_dir()
    if not (folder / BROKER_COMPLETE).is_file():
        raise UserError(f"the Kafka broker's jars are not in {folder}; run `make setup`")
    return ":".join(str(p) for p in sorted(folder.glob("*.jar")))


def fetch() -> list[Path]:
    """Resolve with Ivy (network, once) and copy the named jars into the cache."""
    return fetch_spark() + fetch_broker()


def fetch_spark() -> list[Path]:
    from pyspark.sql import SparkSession

    pins = spark_list()
    coords = pins.coords
    paths.jars_dir().mkdir(parents=True, exist_ok=True)
    wanted = {c: paths.jars_dir() / jar_name(c) for c in coords}
    if all(p.is_file() for p in wanted.values()):
        for p in wanted.values():
            verify(p, pins)
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
        verify(dest, pins)
    return list(wanted.values())


def _ivy_jar() -> Path:
    import pyspark

    found = sorted((Path(pyspark.__file__).parent / "jars").glob("ivy-*.jar"))
    if not found:
        raise UserError("pyspark ships no Ivy jar to resolve the Kafka broker with")
    return found[-1]


def _ivy_module(coords: list[str]) -> str:
    deps = "\n".join(
        f'    <dependency org="{g}" name="{a}" rev="{v}" conf="default->default"/>'
        for g, a, v in (c.split(":") for c in coords)
    )
    return (
        '<ivy-module version="2.0">\n  <info organisation="statekeeper" module="kafka-broker"/>\n'
        f"  <dependencies>\n{deps}\n  </dependencies>\n</ivy-module>\n"
    )


def fetch_broker() -> list[Path]:
    """The broker and its dependencies (``bundle`` is how some, like scala-logging, are packaged;
    Ivy's default conflict manager keeps the newest version,
    so the pinned slf4j-api 2.x wins over the 1.7 its dependencies ask for)."""
    folder = paths.broker_jars_dir()
    pins = broker_list()
    if (folder / BROKER_COMPLETE).is_file():
        return sorted(folder.glob("*.jar"))
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        module = Path(tmp) / "ivy.xml"
        module.write_text(_ivy_module(pins.coords))
        cmd = [
            "java",
            "-jar",
            str(_ivy_jar()),
            "-ivy",
            str(module),
            "-cache",
            str(paths.ivy_dir() / "cache"),
            "-confs",
            "default",
            "-types",
            "jar",
            "bundle",
            "-retrieve",
            f"{folder}/[artifact]-[revision](-[classifier]).[ext]",
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    jars = sorted(folder.glob("*.jar"))
    if done.returncode != 0 or not jars:
        tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["no output"]
        raise UserError(f"Ivy could not resolve the Kafka broker's jars: {tail[0]}")
    check_broker(folder, pins)
    (folder / BROKER_COMPLETE).write_text("\n".join(p.name for p in jars) + "\n")
    return jars


def check_broker(folder: Path, pins: JarList) -> None:
    """Every resolved jar is pinned and matches; none pinned is missing (one line otherwise)."""
    jars = sorted(folder.glob("*.jar"))
    for jar in jars:
        verify(jar, pins)
    missing = sorted(set(pins.pins) - {j.name for j in jars})
    if missing:
        raise UserError(
            f"Ivy did not resolve {', '.join(missing)} pinned in {pins.path}; the resolution "
            "changed: check the versions there"
        )


if __name__ == "__main__":
    what = sys.argv[2:3] or ["all"]
    if sys.argv[1:2] != ["fetch"] or what[0] not in ("all", "spark", "broker"):
        sys.exit("usage: python -m spark_jobs.runtime.jars fetch [all | spark | broker]")
    fetched = {"all": fetch, "spark": fetch_spark, "broker": fetch_broker}[what[0]]()
    for p in fetched:
        print(f"cached {p}")
