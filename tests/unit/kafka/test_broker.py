"""The local broker's cluster id: never one the storage tool reads as an option."""

from __future__ import annotations

import uuid

import pytest

from spark_jobs.kafka import broker

pytestmark = pytest.mark.unit


def test_a_cluster_id_never_starts_with_a_dash(monkeypatch):
    # 0xf8 as the first byte makes URL-safe base64 start with "-" (index 62)
    made = iter([uuid.UUID(bytes=b"\xf8" + b"\x00" * 15), uuid.UUID(bytes=b"\x10" * 16)])
    monkeypatch.setattr(broker.uuid, "uuid4", lambda: next(made))
    got = broker.cluster_id()
    assert got == "EBAQEBAQEBAQEBAQEBAQEA"
    assert len(got) == 22
