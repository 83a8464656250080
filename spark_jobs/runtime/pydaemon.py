"""The Python worker daemon Spark starts (``spark.python.daemon.module``): pyspark's own, with
one fix so a typed state schema with arrays works in ``applyInPandasWithState``, a cheaper
collection after each task, and its workers importing the installed pyspark rather than Spark's
zips (:mod:`~spark_jobs.runtime.worker_path`).

Why: PySpark 4.2's worker reads the state schema's JSON through ``Conf.get``, which lowercases
every string value, so ``elementType``/``containsNull`` arrive as ``elementtype`` and any
``array<...>`` (or map) in the state schema fails in the worker with ``KeyError: 'elementType'``
before the job's function runs. Structs of scalars survive; arrays of sessions, held events or
one bucket's keys do not. The fix reads the schema without lowercasing. It is applied in each
forked worker, not in the daemon: the daemon must not import pandas/pyarrow (they start threads)
before it forks. Remove this part once PySpark reads the schema with ``lower_str=False``.

The collection: pyspark's daemon runs a full ``gc.collect()`` in a worker after every task. Once a
task has imported pandas and pyarrow, that walks about 98,000 objects: 110 to 200 ms of a core
per task, measured in the workers (2.3 s of the 1M-event ``sessions`` catch-up, about 0.5 s of
each small ``user_counts`` batch, where it delays the next task on that worker). Each task now
starts by freezing the objects alive then (``gc.freeze``: the collection after it then walks only
what the task made, under 1 ms), so a task's garbage is still collected after it. Every
:data:`FULL_COLLECT_EVERY`-th task unfreezes them first, so the full collection still runs now and
then and a cycle that became garbage among the older objects is reclaimed in a long-running job.
"""

from __future__ import annotations

import gc
import json
import socket
from typing import Any

from spark_jobs.runtime import worker_path

worker_path.prefer_installed()  # before pyspark is imported: see worker_path
from pyspark import daemon  # noqa: E402 - the import path above decides where it comes from

_worker = daemon.worker
FULL_COLLECT_EVERY = 64
_tasks = [0]  # tasks this worker process ran (each forked worker has its own copy)


def _state_value_schema(conf: Any) -> Any:
    from pyspark.sql.types import StructType

    schema = conf.get("state_value_schema", None, lower_str=False)
    return None if schema is None else StructType.fromJson(json.loads(schema))


def before_task() -> None:
    """Freeze what is alive before a task (see the module's docstring); every
    :data:`FULL_COLLECT_EVERY`-th task unfreezes instead, for a full collection after it."""
    _tasks[0] += 1
    if _tasks[0] % FULL_COLLECT_EVERY:
        gc.freeze()
    else:
        gc.unfreeze()


def _fixed_worker(sock: socket.socket, authenticated: bool) -> int:
    from pyspark import worker

    before_task()
    worker.EvalConf.state_value_schema = property(_state_value_schema)  # type: ignore[assignment]
    return _worker(sock, authenticated)


daemon.worker = _fixed_worker  # manager() looks it up at each fork

if __name__ == "__main__":
    daemon.manager()
