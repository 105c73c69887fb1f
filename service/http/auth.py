"""Who is calling: bearer-token authentication, the caller's scopes, and its per-request store handle."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from service.http.errors import ProblemError, forbidden, not_found
from service.teams.tokens import Principal, authenticate

if TYPE_CHECKING:
    from service.substrate import Substrate

__all__ = ["Caller", "CallerDep", "current_caller"]

_bearer = HTTPBearer(auto_error=False, description="`substrate token create --principal NAME` prints a token")
_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="substrate"'}


@dataclass(frozen=True)
class Caller:
    """The authenticated principal plus a store handle whose writes are recorded as that principal's."""

    principal: Principal
    store: Substrate  # per-request handle: events it appends carry principal.name
    live: Substrate  # the served store (reads, views)

    @property
    def name(self) -> str:
        return self.principal.name

    @property
    def readable(self) -> list[str]:
        return sorted(self.principal.readable)

    def require_read(self, scope: str, what: str) -> None:
        """404 (never 403) unless the caller may read ``scope``: existence must not leak."""
        if not self.principal.can_read(scope):
            raise not_found(f"{what} not found")

    def require_write_target(self, scope: str) -> None:
        """403 unless the caller may write ``scope``, the scope a write goes into. Naming a scope to write into
        tells nothing about it (any name is a scope), so there is no existence to hide: 403, never 404."""
        if not self.principal.can_write(scope):
            raise forbidden(f"principal {self.name!r} may not write scope {scope!r}")

    def require_write(self, scope: str, what: str) -> None:
        """The write door's own check, asked before work that would only end at the door: 403 when ``scope`` is
        readable but not writable; 404 when it is not even readable."""
        if self.store.allows("write", scope):
            return
        if self.principal.can_read(scope):
            raise forbidden(f"principal {self.name!r} may read but not write scope {scope!r}")
        raise not_found(f"{what} not found")


async def current_caller(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> Caller:
    """The dependency every /v1 route takes: 401 without a live bearer token."""
    if credentials is None:
        raise ProblemError(401, "missing bearer token: send 'Authorization: Bearer <token>'", headers=_CHALLENGE)
    store: Substrate = request.app.state.store
    principal = await run_in_threadpool(authenticate, store, credentials.credentials)
    if principal is None:
        raise ProblemError(401, "unknown or revoked bearer token", headers=_CHALLENGE)
    request.state.principal = principal
    return Caller(principal, store.with_principal(principal.name), store)


CallerDep = Annotated[Caller, Depends(current_caller)]
