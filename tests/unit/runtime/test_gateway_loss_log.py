"""py4j reports a call that met a gateway gone away with ``logging.exception`` on the root logger,
two chained tracebacks on stderr, before it raises the error a run turns into its one line. A
session's filter drops that report and nothing else."""

from __future__ import annotations

import logging

import pytest
from py4j.protocol import Py4JNetworkError

from spark_jobs.runtime import session

pytestmark = pytest.mark.unit


@pytest.fixture
def quiet_root(caplog):
    root = logging.getLogger()
    before = list(root.filters)
    session._quiet_gateway_loss()
    session._quiet_gateway_loss()  # once per process, however many sessions
    yield caplog
    root.filters[:] = before


def _logged(error: Exception) -> None:
    try:
        raise error
    except Exception:
        logging.exception("Exception while sending command.")  # what py4j calls


def test_a_call_on_a_gone_gateway_is_not_reported_twice(quiet_root):
    added = [f for f in logging.getLogger().filters if isinstance(f, session._GatewayLossFilter)]
    assert len(added) == 1
    _logged(Py4JNetworkError("Error while sending or receiving"))
    _logged(ConnectionResetError(104, "Connection reset by peer"))
    assert quiet_root.records == []


def test_every_other_error_is_still_reported(quiet_root):
    _logged(ValueError("a bug of ours"))
    logging.getLogger("py4j.clientserver").error("x", exc_info=Py4JNetworkError("kept"))
    assert [r.getMessage() for r in quiet_root.records] == [
        "Exception while sending command.",
        "x",
    ]
