"""Jars fetched once from Maven Central into ``./.cache`` so runs and tests start offline.

``python -m spark_jobs.runtime.jars fetch`` (run by ``make setup``) downloads every coordinate
of two pinned lists, each checked against its SHA-256 before it is kept:

- Spark's jars, ``include/spark/jars.txt`` (Delta and the Kafka source), into ``.cache/jars``:
  only they go on ``spark.jars``, none of their dependencies (Hadoop, Jackson and Parquet jars
  that would shadow the ones Spark ships).
- The local Kafka broker's jars, ``include/kafka/broker-jars.txt`` (the broker and every jar it
  needs, written out), into ``.cache/kafka-broker``. The broker runs in its own JVM (``kafka
  up``), so its Scala and Jackson never meet Spark's.

The lists are complete, so no resolver runs at set-up: Ivy took about 45 s (a JVM, a Spark
session, and a POM walk through every transitive dependency) for what a few parallel downloads
do in seconds. ``STATEKEEPER_MAVEN_REPO`` names a mirror with Maven Central's layout.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from spark_jobs.contract import paths
from spark_jobs.contract.errors import UserError
from spark_jobs.contract.jvm import (  # the pins and where the jars are: the contract's
    JarList,
    jar_name,
    read_list,
    spark_list,
)

BROKER_COMPLETE = ".complete"  # written last, naming the jars: anything else is a cut-off fetch
BROKER_LIST = Path("include") / "kafka" / "broker-jars.txt"
MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
REPO_ENV = "STATEKEEPER_MAVEN_REPO"
DOWNLOADS_AT_ONCE = 8
TIMEOUT_S = 60  # per read of a download: a stalled connection fails set-up instead of hanging


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify(jar: Path, pins: JarList, name: str | None = None) -> None:
    """``jar`` (kept as ``name``, its own name unless given) has the SHA-256 pinned for that
    name; otherwise it is deleted (never used) and one line says which jar, both digests and
    where the pin is."""
    name = name or jar.name
    want = pins.pins[name]  # only pinned names are ever fetched or kept
    got = sha256(jar)
    if want == got:
        return
    jar.unlink()
    raise UserError(
        f"jar {name} has sha256:{got}, not the sha256:{want} pinned in {pins.path}; "
        "deleted (the download was altered or truncated): fetch again"
    )


def broker_list() -> JarList:
    return read_list(paths.project_root() / BROKER_LIST)


def broker_classpath() -> str:
    """The local broker's classpath; a one-line error when set-up has not fetched it."""
    folder = paths.broker_jars_dir()
    if not (folder / BROKER_COMPLETE).is_file():
        raise UserError(f"the Kafka broker's jars are not in {folder}; run `make setup`")
    return ":".join(str(p) for p in sorted(folder.glob("*.jar")))


def jar_url(coord: str) -> str:
    group, artifact, version = coord.split(":")
    repo = (os.environ.get(REPO_ENV) or MAVEN_CENTRAL).rstrip("/")
    return f"{repo}/{group.replace('.', '/')}/{artifact}/{version}/{artifact}-{version}.jar"


def download(coord: str, folder: Path, pins: JarList) -> Path:
    """The coordinate's jar in ``folder``, downloaded unless it is there, checked either way. A
    download goes to a hidden ``.part`` file first, so no cut-off jar is ever on a classpath."""
    dest = folder / jar_name(coord)
    if dest.is_file():
        verify(dest, pins)
        return dest
    url = jar_url(coord)
    part = folder / f".{dest.name}.part"
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as got, open(part, "wb") as fh:
            shutil.copyfileobj(got, fh, 1 << 20)
    except OSError as e:  # URLError and HTTPError are OSErrors; so is a read timing out
        part.unlink(missing_ok=True)
        raise UserError(
            f"could not download {url}: {e}; is Maven Central (or the mirror in {REPO_ENV}) "
            "reachable?"
        ) from e
    verify(part, pins, dest.name)
    part.rename(dest)
    return dest


def download_all(pins: JarList, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=DOWNLOADS_AT_ONCE) as pool:
        futures = [pool.submit(download, c, folder, pins) for c in pins.coords]
        return [f.result() for f in futures]  # the first failure, in the list's order


def fetch() -> list[Path]:
    """Download both lists' jars into the cache (network, once)."""
    return fetch_spark() + fetch_broker()


def fetch_spark() -> list[Path]:
    """Spark's jars, and the project's own jar compiled beside them (:mod:`.own_jar`)."""
    from spark_jobs.runtime import own_jar

    return [*download_all(spark_list(), paths.jars_dir()), own_jar.build()]


def fetch_broker() -> list[Path]:
    """The broker's jars. A folder whose ``.complete`` names other jars (the list changed, or a
    fetch was cut off) is fetched again, keeping the jars that still match their pins."""
    folder = paths.broker_jars_dir()
    pins = broker_list()
    done = folder / BROKER_COMPLETE
    if done.is_file() and done.read_text().split() == sorted(pins.pins):
        return sorted(folder.glob("*.jar"))
    done.unlink(missing_ok=True)
    for stale in folder.glob("*.jar"):
        if stale.name not in pins.pins:
            stale.unlink()  # an older version's jar: never beside the new one on the classpath
    download_all(pins, folder)  # every pinned jar there and checked; nothing else left
    done.write_text("\n".join(sorted(pins.pins)) + "\n")
    return sorted(folder.glob("*.jar"))


if __name__ == "__main__":
    what = sys.argv[2:3] or ["all"]
    if sys.argv[1:2] != ["fetch"] or what[0] not in ("all", "spark", "broker"):
        sys.exit("usage: python -m spark_jobs.runtime.jars fetch [all | spark | broker]")
    try:
        fetched = {"all": fetch, "spark": fetch_spark, "broker": fetch_broker}[what[0]]()
    except UserError as e:
        sys.exit(f"error: {e}")
    for p in fetched:
        print(f"cached {p}")
