"""Where a local Spark driver listens: on the loopback address only.

Spark's driver binds its RPC and block-manager ports to the host's LAN address by default, so a
``local[N]`` run would accept connections from the network for no reason: its executors are
threads of the same JVM. A driver whose master is local binds 127.0.0.1; one that talks to a
cluster keeps Spark's defaults (its executors must reach it).
"""

from __future__ import annotations

LOOPBACK = "127.0.0.1"


def is_local_master(master: str) -> bool:
    """``local``, ``local[N]``, ``local[*]``, ``local[N,F]``, ``local-cluster[...]``."""
    return master == "local" or master.startswith(("local[", "local-cluster["))


def driver_confs(master: str) -> dict[str, str]:
    """The Spark confs that keep a local master's driver on the loopback address (none for a
    cluster master)."""
    if not is_local_master(master):
        return {}
    return {"spark.driver.host": LOOPBACK, "spark.driver.bindAddress": LOOPBACK}
