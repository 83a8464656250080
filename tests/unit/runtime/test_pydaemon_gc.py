"""The worker daemon's collection after each task: it walks only what the task made, still
collects that task's garbage, and every FULL_COLLECT_EVERY-th task collects in full."""

from __future__ import annotations

import gc

import pytest

from spark_jobs.runtime import pydaemon

pytestmark = pytest.mark.unit


@pytest.fixture
def fresh_worker(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(pydaemon, "_tasks", [0])
    yield
    gc.unfreeze()


def test_a_task_starts_with_what_is_alive_frozen_and_every_nth_unfrozen(fresh_worker) -> None:
    every = pydaemon.FULL_COLLECT_EVERY
    frozen = []
    for _ in range(2 * every):
        pydaemon.before_task()
        frozen.append(gc.get_freeze_count() > 0)
    full = [n for n, f in enumerate(frozen, start=1) if not f]
    assert full == [every, 2 * every]


def test_the_collection_after_a_task_still_frees_the_tasks_cycles(fresh_worker) -> None:
    alive = len(gc.get_objects())
    pydaemon.before_task()
    assert len(gc.get_objects()) < alive // 10  # the collection no longer walks them

    class Node:
        pass

    a, b = Node(), Node()
    a.other, b.other = b, a  # a cycle only the collector frees
    del a, b
    assert gc.collect() >= 2
