"""A local-master session (every run outside spark-submit, every test) binds its driver to the
loopback address, not the machine's LAN address."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration


def test_the_local_session_driver_binds_loopback(spark):
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.master").startswith("local")
    assert conf.get("spark.driver.host") == "127.0.0.1"
    assert conf.get("spark.driver.bindAddress") == "127.0.0.1"
