"""The "Streaming health" app, mounted by Airflow's api-server under ``/statekeeper``.

Airflow does not authenticate plugin apps: every route here depends on Airflow's own
``requires_access_dag("GET")``, which reads the JWT from the ``Authorization: Bearer`` header or
the UI's ``_token`` cookie (so the page works inside the UI's iframe) and asks the configured auth
manager whether the user may read DAGs. No token: 401; a user without read access: 403.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from spark_jobs.contract.errors import UserError
from spark_jobs.runtime import progress_tail
from statekeeper import health_page, health_report

STATIC = Path(__file__).resolve().parent / "static"
STATIC_FILES = {"health.css": "text/css", "icon.svg": "image/svg+xml"}
MAX_RECORDS = 1000  # raw records per progress request: a record is 2-3 KB
RANGES: dict[str, tuple[str, float | None, int | None]] = {  # key -> (label, seconds, batches)
    "last100": ("last 100 batches", None, 100),
    "1h": ("1 hour", 3600.0, None),
    "6h": ("6 hours", 6 * 3600.0, None),
    "24h": ("24 hours", 24 * 3600.0, None),
    "7d": ("7 days", 7 * 86400.0, None),
    "all": ("all", None, None),
}
DEFAULT_RANGE = "last100"


async def require_read_access(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(HTTPBearer(auto_error=False))],
) -> None:
    """Airflow's own checks, resolved per request: ``get_user`` (bearer token, else the UI's
    ``_token`` cookie; 401 without) and ``requires_access_dag("GET")`` (403 without read access).

    Imported here, not at module level: Airflow's plugin loader imports this module in every
    process (scheduler, workers), and ``core_api.security`` pulls in the whole API and ORM.
    """
    from airflow.api_fastapi.core_api import security

    user = await security.get_user(request, None, bearer)
    security.requires_access_dag("GET")(request, user)


def _spec(job: str):
    try:
        return health_report.spec_of(job)
    except UserError as exc:
        raise HTTPException(status_code=404, detail=str(exc)) from exc


def _time(value: str | None, name: str) -> float | None:
    """An ISO-8601 time (``2026-11-23T09:00:00Z``) or epoch seconds."""
    if value is None or value == "":
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise HTTPException(
            status_code=400,
            detail=f"{name}={value!r} is not a time; use ISO-8601 (2026-11-23T09:00:00Z) or epoch seconds",
        ) from None
    return (dt if dt.tzinfo else dt.replace(tzinfo=UTC)).timestamp()  # naive times are UTC


def _range(key: str, now: float) -> tuple[float | None, int | None]:
    if key not in RANGES:
        raise HTTPException(
            status_code=400, detail=f"range={key!r} is unknown; use one of {', '.join(RANGES)}"
        )
    _, seconds, batches = RANGES[key]
    return (now - seconds if seconds else None), batches


def create_app(auth: bool = True) -> FastAPI:
    """The app; ``auth=False`` only for tools that call the report functions in-process."""
    deps = [Depends(require_read_access)] if auth else []
    app = FastAPI(
        title="Statekeeper streaming health",
        description="Health of the streaming jobs, read from their progress logs and checkpoints.",
        dependencies=deps,
        docs_url=None,
        redoc_url=None,
        openapi_url="/api/openapi.json",
    )

    @app.get("/api/health")
    def api_health() -> list[dict[str, Any]]:
        """One object per job (every spec in include/jobs)."""
        return health_report.health()

    @app.get("/api/jobs/{job}/progress")
    def api_progress(
        job: str,
        limit: Annotated[int, Query(ge=1, le=MAX_RECORDS)] = 100,
        since: str | None = None,
        until: str | None = None,
        idle: bool = False,
    ) -> list[dict[str, Any]]:
        """The job's newest ``limit`` progress records in [since, until], oldest first."""
        spec = _spec(job)
        start, end = _time(since, "since"), _time(until, "until")
        records = progress_tail.newest_records(
            spec.checkpoint, limit=limit, since=start, until=end, idle=idle
        )
        return health_report.with_older(spec, records, limit, start, end)  # rotated-away history

    @app.get("/api/jobs/{job}/series")
    def api_series(
        job: str,
        range: str = DEFAULT_RANGE,  # noqa: A002 - the query parameter's name
        since: str | None = None,
        until: str | None = None,
        points: Annotated[int, Query(ge=2, le=2000)] = 300,
    ) -> dict[str, Any]:
        """Chart points (downsampled) over a range: last100, 1h, 6h, 24h, 7d, all, or since/until."""
        spec = _spec(job)
        start, last = _range(range, time.time())
        if since is not None:
            start, last = _time(since, "since"), None
        return health_report.series(spec, start, _time(until, "until"), last, points)

    @app.get("/", response_class=HTMLResponse)
    def page(request: Request) -> str:
        return health_page.overview(health_report.health(), base=request.scope.get("root_path", ""))

    @app.get("/jobs/{job}", response_class=HTMLResponse)
    def job_page(request: Request, job: str, range: str = DEFAULT_RANGE) -> str:  # noqa: A002
        spec = _spec(job)
        now = time.time()
        start, last = _range(range, now)
        data = health_report.series(spec, start, None, last, 300)
        row = health_report.job_row(spec, now)
        ranges = {k: v[0] for k, v in RANGES.items()}
        return health_page.job(row, data, range, ranges, base=request.scope.get("root_path", ""))

    @app.get("/static/{name}")
    def static(name: str) -> FileResponse:
        if name not in STATIC_FILES:
            raise HTTPException(status_code=404, detail=f"no static file {name!r}")
        return FileResponse(STATIC / name, media_type=STATIC_FILES[name])

    return app
