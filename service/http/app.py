"""The HTTP API: a thin FastAPI wrapper over the library facade (no SQL here; Pydantic only at this edge)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, cast

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.concurrency import run_in_threadpool

from service.http import admin, audit, ingest, items, search, share
from service.http.auth import current_caller
from service.http.docs import install_docs
from service.http.edge import BodyLimit, log_paths_only, max_body_from_env
from service.http.errors import RETRY_AFTER, install_handlers, problem_response
from service.http.models import JSON_VALUE_SCHEMA, PROBLEM_RESPONSES, Health
from service.search.upkeep import BackgroundRunner

if TYPE_CHECKING:
    from service.substrate import Substrate

__all__ = ["create_app"]

log = logging.getLogger("substrate.http")

_DESCRIPTION = """\
Every write becomes an immutable, hash-chained event; every read comes from projections of that log.

Authenticate with `Authorization: Bearer <token>` (`substrate token create --principal NAME`). A principal
reads its home scope (its own name), `public`, and the scopes granted to it; anything else answers 404,
never 403, so existence does not leak. Reads take `?as_of=<seq or ISO-8601 time>`. Errors are
`application/problem+json`.
"""


def create_app(
    store: Substrate | Callable[[], Substrate], *, background: float | None = None, max_body: int | None = None
) -> FastAPI:
    """The ASGI app over ``store`` (kept open by the caller), or over ``store()`` opened at startup and closed after.

    ``background``: run a BackgroundRunner with this interval (seconds) while the app is up. ``max_body``: the
    largest request body in bytes (and the longest line of an upload; default $SUBSTRATE_MAX_BODY, else 8 MiB):
    a larger one answers 413 before any work is done.
    """
    owned = callable(store) and not hasattr(store, "engine")
    limit = max_body_from_env() if max_body is None else max_body
    if limit < 1:
        raise ValueError(f"max_body must be a positive number of bytes, got {limit}")
    log_paths_only()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if owned:
            app.state.store = await run_in_threadpool(cast("Callable[[], Substrate]", store))
        runner = BackgroundRunner(app.state.store.engine, interval=background).start() if background else None
        try:
            yield
        finally:
            if runner is not None:
                await run_in_threadpool(runner.stop)
            if owned:
                app.state.store.close()

    app = FastAPI(
        title="Substrate", version="1.0", description=_DESCRIPTION, lifespan=lifespan, docs_url=None, redoc_url=None
    )
    if not owned:
        app.state.store = store
    app.state.max_body = limit
    install_handlers(app)
    install_docs(app)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = FastAPI.openapi(app)
            schema.setdefault("components", {}).setdefault("schemas", {})["JsonValue"] = JSON_VALUE_SCHEMA
        return app.openapi_schema  # type: ignore[return-value]

    app.openapi = openapi  # type: ignore[method-assign]
    app.add_middleware(BodyLimit, limit=limit, streamed=frozenset({"/v1/ingest"}))

    @app.get(
        "/healthz",
        response_model=Health,
        tags=["service"],
        summary="Liveness: is the database reachable",
        responses={503: PROBLEM_RESPONSES[503]},
    )
    def healthz(request: Request) -> Any:
        """200 when the database answers; 503 otherwise. No token is needed, so it says nothing else (not even
        the log head: how much every team writes is no one's business without a token)."""
        try:
            request.app.state.store.events.head()
            return Health(status="ok")
        except Exception as exc:  # noqa: BLE001 - any failure to reach the database is "unhealthy"
            log.warning("health check failed: %s", exc)
            return problem_response(503, "the database is unreachable", headers={"Retry-After": RETRY_AFTER})

    v1 = APIRouter(prefix="/v1", dependencies=[Depends(current_caller)], responses=PROBLEM_RESPONSES)
    for module in (items, search, share, ingest, audit, admin):
        v1.include_router(module.router)
    app.include_router(v1)
    return app
