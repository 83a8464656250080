"""The Python worker daemon Spark starts (``spark.python.daemon.module``): pyspark's own, with
one fix so a typed state schema with arrays works in ``applyInPandasWithState``.

Why: PySpark 4.2's worker reads the state schema's JSON through ``Conf.get``, which lowercases
every string value, so ``elementType``/``containsNull`` arrive as ``elementtype`` and any
``array<...>`` (or map) in the state schema fails in the worker with ``KeyError: 'elementType'``
before the job's function runs. Structs of scalars survive; arrays of sessions, held events or
one bucket's keys do not. The fix reads the schema without lowercasing. It is applied in each
forked worker, not in the daemon: the daemon must not import pandas/pyarrow (they start threads)
before it forks. Remove this module once PySpark reads the schema with ``lower_str=False``.
"""

from __future__ import annotations

import json
import socket
from typing import Any

from pyspark import daemon

_worker = daemon.worker


def _state_value_schema(conf: Any) -> Any:
    from pyspark.sql.types import StructType

    schema = conf.get("state_value_schema", None, lower_str=False)
    return None if schema is None else StructType.fromJson(json.loads(schema))


def _fixed_worker(sock: socket.socket, authenticated: bool) -> int:
    from pyspark import worker

    worker.EvalConf.state_value_schema = property(_state_value_schema)  # type: ignore[assignment]
    return _worker(sock, authenticated)


daemon.worker = _fixed_worker  # manager() looks it up at each fork

if __name__ == "__main__":
    daemon.manager()
