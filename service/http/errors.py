"""Every HTTP error is an ``application/problem+json`` document; user input never produces a 500."""

from __future__ import annotations

import logging
import re
from http import HTTPStatus
from typing import Any

import psycopg
import psycopg.errors
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DataError, DisconnectionError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException

from service.domain.errors import (
    AccessDeniedError,
    ConcurrencyError,
    GovernanceAuthorizationError,
    ReadOnlyError,
    StateConflictError,
    SubstrateError,
)

__all__ = [
    "RETRY_AFTER",
    "ProblemError",
    "bad_request",
    "forbidden",
    "install_handlers",
    "not_found",
    "problem_response",
]

PROBLEM = "application/problem+json"
RETRY_AFTER = "5"  # seconds a client waits before retrying when the database cannot be reached
log = logging.getLogger("substrate.http")


class ProblemError(Exception):
    """Raised by endpoints to answer with a problem document of ``status``."""

    def __init__(self, status: int, detail: str, *, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status, self.detail, self.headers = status, detail, headers


def not_found(detail: str) -> ProblemError:
    return ProblemError(404, detail)


def forbidden(detail: str) -> ProblemError:
    return ProblemError(403, detail)


def bad_request(detail: str) -> ProblemError:
    return ProblemError(400, detail)


def problem_response(status: int, detail: str, *, headers: dict[str, str] | None = None) -> JSONResponse:
    """The problem document {type, title, status, detail} with its media type."""
    body = {"type": "about:blank", "title": HTTPStatus(status).phrase, "status": status, "detail": detail}
    return JSONResponse(body, status_code=status, media_type=PROBLEM, headers=headers)


def _validation_detail(errors: list[Any]) -> tuple[int, str]:
    status, parts = 422, []
    for err in errors[:5]:
        if err.get("type") == "json_invalid" or tuple(err.get("loc", ())) == ("query", "cursor"):
            status = 400  # malformed JSON, or a cursor this API never returned
        where = ".".join(str(p) for p in err.get("loc", ()))
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return status, "; ".join(parts) + more


def _allowed(request: Request) -> str:
    """Every method the OpenAPI document gives this path: Starlette's 405 names only the methods of the first route
    that matched the path (there is one route per method), so a path with GET and POST said ``Allow: POST``."""
    methods: set[str] = set()
    for template, operations in request.app.openapi().get("paths", {}).items():
        if re.fullmatch(re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template)), request.url.path):
            methods |= {m.upper() for m in operations if m in _METHODS}
    return ", ".join(sorted(methods))


_METHODS = frozenset({"get", "put", "post", "delete", "options", "head", "patch", "trace"})


def _message(exc: BaseException) -> str:
    # KeyError's str() is the repr of its argument; the others carry a sentence.
    if isinstance(exc, KeyError) and exc.args:
        return f"not found: {exc.args[0]!r}"
    return str(exc) or type(exc).__name__


def install_handlers(app: FastAPI) -> None:
    """Map the library's typed errors onto HTTP statuses, all as problem documents."""

    async def problem(request: Request, exc: ProblemError) -> JSONResponse:
        return problem_response(exc.status, exc.detail, headers=exc.headers)

    async def validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        status, detail = _validation_detail(list(exc.errors()))
        return problem_response(status, detail)

    async def http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        headers = getattr(exc, "headers", None)
        if exc.status_code == 405:
            headers = {**(headers or {}), "Allow": _allowed(request)}
        return problem_response(exc.status_code, str(exc.detail), headers=headers)

    async def access(request: Request, exc: AccessDeniedError) -> JSONResponse:
        # Existence must not leak: a scope the caller cannot even read answers 404, never 403.
        caller = getattr(request.state, "principal", None)
        if caller is not None and caller.can_read(exc.scope):
            return problem_response(403, str(exc))
        return problem_response(404, f"scope {exc.scope!r} not found")

    def status(code: int) -> Any:
        async def handler(request: Request, exc: Exception) -> JSONResponse:
            return problem_response(code, _message(exc))

        return handler

    async def data(request: Request, exc: DataError) -> JSONResponse:
        # The database refused a value (out of range, unstorable text): the input's fault, never a 500.
        reason = str(getattr(exc, "orig", exc)).splitlines()[0]
        return problem_response(422, f"a value in the request cannot be stored or compared: {reason}")

    async def unavailable(request: Request, exc: Exception) -> JSONResponse:
        # The database is down, restarting or out of connections: the request did nothing; try again shortly.
        log.warning("database unavailable on %s %s: %s", request.method, request.url.path, type(exc).__name__)
        return problem_response(503, "the database is unreachable; retry shortly", headers={"Retry-After": RETRY_AFTER})

    async def crash(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return problem_response(500, "internal error; the request was not completed (see the server log)")

    app.add_exception_handler(ProblemError, problem)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, validation)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, http)  # type: ignore[arg-type]
    app.add_exception_handler(AccessDeniedError, access)  # type: ignore[arg-type]
    app.add_exception_handler(GovernanceAuthorizationError, status(403))
    app.add_exception_handler(PermissionError, status(403))
    app.add_exception_handler(ConcurrencyError, status(409))
    app.add_exception_handler(ReadOnlyError, status(409))
    app.add_exception_handler(StateConflictError, status(409))
    app.add_exception_handler(KeyError, status(404))
    # The rest of the service's own tree (bad input, refused secrets, snapshot rows): the detail names field and
    # reason. Starlette picks the handler of the nearest class in the error's MRO, so the ones above win.
    app.add_exception_handler(SubstrateError, status(422))
    # InvalidArgument, SecretPolicyError and the items' own ValueErrors: the detail names field and reason.
    app.add_exception_handler(ValueError, status(422))
    app.add_exception_handler(TypeError, status(422))
    app.add_exception_handler(RecursionError, status(422))
    app.add_exception_handler(DataError, data)  # type: ignore[arg-type]
    app.add_exception_handler(psycopg.errors.DataError, data)  # type: ignore[arg-type]  # the append path's own
    for unreachable in (OperationalError, InterfaceError, DisconnectionError, PoolTimeout, psycopg.OperationalError):
        app.add_exception_handler(unreachable, unavailable)
    app.add_exception_handler(Exception, crash)
