"""What the edge does to every request before any route runs: the body size limit, and an access log that never
records a query string (a query may carry a credential: ``?source=https://user:token@host``)."""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.exceptions import HTTPException

from service.guard.secrets import redact_secrets
from service.http.errors import problem_response

__all__ = ["DEFAULT_MAX_BODY", "MAX_BODY_ENV", "BodyLimit", "PathsOnly", "log_paths_only", "max_body_from_env"]

DEFAULT_MAX_BODY = 8 << 20  # 8 MiB: a request body, or one line of an upload
MAX_BODY_ENV = "SUBSTRATE_MAX_BODY"
_ACCESS_LOGGER = "uvicorn.access"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def max_body_from_env() -> int:
    """The body limit in bytes: $SUBSTRATE_MAX_BODY when set (a positive whole number), else 8 MiB."""
    raw = os.environ.get(MAX_BODY_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_MAX_BODY
    if not raw.strip().isdigit() or int(raw) < 1:
        raise ValueError(f"${MAX_BODY_ENV} must be a positive whole number of bytes, got {raw!r}")
    return int(raw)


class BodyLimit:
    """ASGI middleware: a body over ``limit`` bytes answers 413 problem+json before any route works on it.

    A declared Content-Length over the limit is refused before the body is read; a body sent without one is
    counted as it arrives, and refused as soon as it passes the limit (a route reads its JSON body whole before it
    runs). Routes in ``streamed`` read their body as a stream of lines and apply the limit per line themselves.
    """

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], *, limit: int, streamed: frozenset[str]):
        self.app, self.limit, self.streamed = app, limit, streamed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.streamed:
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            response = problem_response(413, self._detail(declared.decode("latin-1")))
            await response(scope, receive, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise HTTPException(413, self._detail(f"more than {self.limit}"))
            return message

        await self.app(scope, counted, send)

    def _detail(self, size: str) -> str:
        return (
            f"the request body ({size} bytes) is larger than this server's limit of {self.limit} bytes "
            f"(serve --max-body, ${MAX_BODY_ENV})"
        )


class PathsOnly(logging.Filter):
    """Rewrites uvicorn's access-log line to the request's path alone (any secret in it masked): the query
    string is dropped, so a credential passed in one never reaches the log."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            path, _, query = args[2].partition("?")
            record.args = (*args[:2], redact_secrets(path) + ("?[query omitted]" if query else ""), *args[3:])
        return True


def log_paths_only() -> None:
    """Install PathsOnly on uvicorn's access logger (once per process)."""
    logger = logging.getLogger(_ACCESS_LOGGER)
    if not any(isinstance(f, PathsOnly) for f in logger.filters):
        logger.addFilter(PathsOnly())
