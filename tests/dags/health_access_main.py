"""Run in a subprocess on a migrated AIRFLOW_HOME: the Streaming health app behind Airflow's own
auth machinery, with an auth manager that grants DAG-level read the way FAB or Keycloak do.

stdin: ``{"requests": [[user or null, path, params], ...]}``; the grants (user -> DAG ids) come
from ``$STATEKEEPER_TEST_GRANTS``. stdout: one JSON line, ``[[status, body], ...]``.
"""

from __future__ import annotations

import json
import os
import sys

from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager


class DagLevelAuthManager(SimpleAuthManager):
    """Airflow's simple auth manager with per-DAG read access (its own grants are by role)."""

    def is_authorized_dag(self, *, method, user, access_entity=None, details=None):
        grants = json.loads(os.environ["STATEKEEPER_TEST_GRANTS"])
        return (
            method == "GET" and details is not None and details.id in grants.get(user.username, [])
        )


def main() -> None:
    from airflow.api_fastapi.app import init_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
    from fastapi.testclient import TestClient

    from statekeeper.health_app import create_app

    manager = init_auth_manager()
    client = TestClient(create_app())
    out = []
    for user, path, params in json.load(sys.stdin)["requests"]:
        headers = {}
        if user:
            jwt = manager.generate_jwt(SimpleAuthManagerUser(username=user, role="viewer"))
            headers["Authorization"] = f"Bearer {jwt}"
        r = client.get(path, headers=headers, params=params or {})
        ctype = r.headers.get("content-type", "")
        out.append([r.status_code, r.json() if ctype.startswith("application/json") else r.text])
    print(json.dumps(out))


if __name__ == "__main__":
    main()
