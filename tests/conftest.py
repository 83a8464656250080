"""Shared fixtures. One session-scoped ``spark`` (local[2], UI off, few shuffle partitions, Delta);
every test owns its ``tmp_path``. Every test module carries a tier marker or collection fails."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from added_roots import ROOTS_ADDED
from few_tasks import FEW_TASKS

ROOT = Path(__file__).resolve().parents[1]
TIERS = {"unit", "integration", "dags", "e2e"}

os.environ.setdefault("STATEKEEPER_HOME", str(ROOT))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
for p in (str(ROOT), str(ROOT / "plugins")):
    if p not in sys.path:
        sys.path.insert(0, p)

from spark_jobs.contract.jvm import EXTRA as DRIVER_JAVA_OPTIONS  # noqa: E402
from spark_jobs.contract.jvm import QUICK_COMPILER  # noqa: E402

# Each driver a test starts (a CLI process, a spark-submit) lives seconds to a minute on small
# inputs: the JVM's quick compiler alone starts it ~5 s sooner on two cores, where the optimising
# one competes with the job for a core. Not the shared session (``spark`` below): it works for
# the whole run, and without the optimising compiler its heavy fixtures took 1.6x as long.
os.environ.setdefault(DRIVER_JAVA_OPTIONS, QUICK_COMPILER)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unmarked = [i.nodeid for i in items if not TIERS & {m.name for m in i.iter_markers()}]
    if unmarked:
        raise pytest.UsageError(
            f"tests without a tier marker ({', '.join(sorted(TIERS))}): {', '.join(unmarked[:5])}"
        )


@pytest.fixture(scope="session", autouse=True)
def _test_folders_are_roots(tmp_path_factory: pytest.TempPathFactory):
    """Every test's own folder is a landing and a tables root, as a deployment adds its volumes:
    the commands hold ``--input`` and ``--output`` to those roots (the DAG guard's rule), and a
    test keeps its landing folders and tables under its ``tmp_path``. A test of the rule itself
    sets the variables it needs (monkeypatch wins over this); the checkpoint roots stay each
    test's own business."""
    base = str(tmp_path_factory.getbasetemp())
    saved = {v: os.environ.get(v) for v in ROOTS_ADDED}
    for var in ROOTS_ADDED:
        os.environ[var] = ":".join(x for x in (os.environ.get(var), base) if x)
    yield
    for var, value in saved.items():
        if value is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = value


@pytest.fixture(scope="session")
def spark():
    from spark_jobs.runtime.session import build_session

    quick_only = os.environ.pop(DRIVER_JAVA_OPTIONS, None)  # see DRIVER_JAVA_OPTIONS above
    try:
        session = build_session("statekeeper-tests", conf=FEW_TASKS)
    finally:
        if quick_only is not None:
            os.environ[DRIVER_JAVA_OPTIONS] = quick_only
    yield session
    session.stop()


@pytest.fixture
def output_dir() -> Path:
    """Where tests keep what a person may want to look at afterwards (screenshots, figures)."""
    out = ROOT / "tests" / "_output"
    out.mkdir(parents=True, exist_ok=True)
    return out


@pytest.fixture(scope="session")
def kafka_local(tmp_path_factory):
    """One real single-node Kafka broker (KRaft) on a free loopback port for every Kafka test of
    the session, started from the cached jars (bounded wait) and always stopped; its Status. Its
    home is ``<data>/kafka`` for the data folder ``Path(status.home).parent``, as ``kafka up``
    lays it out. Only tests that ask for it pay for it."""
    from spark_jobs.kafka import broker

    home = tmp_path_factory.mktemp("kafka_data") / "kafka"
    status = broker.up(port=broker.free_port(), home=home, timeout=180)
    try:
        yield status
    finally:
        broker.down(home)


@pytest.fixture(scope="session")
def kafka_broker(kafka_local) -> str:
    """The session broker's bootstrap address, ``127.0.0.1:PORT``."""
    return kafka_local.bootstrap
