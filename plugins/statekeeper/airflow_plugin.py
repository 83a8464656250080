"""Registers the "Streaming health" app with Airflow: the FastAPI app under ``/statekeeper``
and a top-level navigation item that opens it inside the UI (an iframe at ``/plugin/streaming-health``).

The only AirflowPlugin of the project; nothing else imports this module, so Airflow's plugin
loader (which imports every file of the plugins folder) finds the class exactly once.
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from statekeeper.health_app import create_app

URL_PREFIX = "/statekeeper"


class StatekeeperPlugin(AirflowPlugin):
    name = "statekeeper"
    fastapi_apps = [
        {"app": create_app(), "url_prefix": URL_PREFIX, "name": "Statekeeper streaming health"}
    ]
    external_views = [
        {
            "name": "Streaming health",
            "href": f"{URL_PREFIX}/",
            "url_route": "streaming-health",
            "destination": "nav",
            "nav_top_level": True,
            "icon": f"{URL_PREFIX}/static/icon.svg",
        }
    ]
