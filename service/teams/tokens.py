"""HTTP bearer tokens: issue, list, revoke, and authenticate (only each token's sha256 is ever stored).

A token is ``sbt_<id>_<secret>``: ``id`` is a public handle (listed, used to revoke), ``secret`` 32 random
bytes. Tokens are credentials, not knowledge: they live in the ``api_tokens`` table, outside the event log,
so a token hash never becomes immutable history and revocation is a plain, immediate update.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from service.domain import policy as rules
from service.domain.validation import InvalidArgument, require_name
from service.store.database import reader
from service.teams.access import PUBLIC

if TYPE_CHECKING:
    from service.substrate import Substrate

__all__ = ["Principal", "TokenInfo", "authenticate", "create_token", "list_tokens", "revoke_token"]

_PREFIX = "sbt_"
_PRINCIPAL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")
_MAX_TOKEN = 256

_INSERT = text("INSERT INTO api_tokens (id, principal, token_hash, label) VALUES (:id, :p, :h, :label)")
# One round trip per request: the token's principal and, from the ``grants`` read model, its granted scopes.
_AUTH = text(
    "SELECT t.id, t.principal, "
    " coalesce((SELECT array_agg(g.scope ORDER BY g.scope) FROM grants g "
    "           WHERE g.principal = t.principal AND g.can_read), '{}'), "
    " coalesce((SELECT array_agg(g.scope ORDER BY g.scope) FROM grants g "
    "           WHERE g.principal = t.principal AND g.can_write), '{}') "
    "FROM api_tokens t WHERE t.token_hash = :h AND t.revoked_at IS NULL"
)
_LIST = (
    "SELECT id, principal, label, created_at, revoked_at FROM api_tokens "
    "WHERE (CAST(:p AS text) IS NULL OR principal = :p) AND (:all OR revoked_at IS NULL) ORDER BY created_at, id"
)
_REVOKE = text("UPDATE api_tokens SET revoked_at = clock_timestamp() WHERE id = :id AND revoked_at IS NULL")


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: its name (= home scope), the token used, and the scopes it may read and write."""

    name: str
    token_id: str
    readable: frozenset[str]
    writable: frozenset[str]

    def can_read(self, scope: str) -> bool:
        return scope in self.readable

    def can_write(self, scope: str) -> bool:
        return scope in self.writable


@dataclass(frozen=True)
class TokenInfo:
    """A token as ``token list`` shows it (never the secret, never the hash)."""

    id: str
    principal: str
    label: str
    created_at: datetime | None
    revoked_at: datetime | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "principal": self.principal,
            "label": self.label,
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "revoked_at": self.revoked_at.isoformat() if self.revoked_at else None,
        }


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _check_principal(principal: Any) -> str:
    name = require_name(principal, "principal")
    if not _PRINCIPAL.fullmatch(name):
        raise InvalidArgument(
            f"principal must be 1-128 characters of letters, digits and . _ : @ - (starting with a letter or "
            f"digit), got {principal!r}"
        )
    if name == PUBLIC:
        raise InvalidArgument(f"{PUBLIC!r} is the shared commons, not a principal")
    return name


def create_token(store: Substrate, principal: str, *, label: str = "") -> tuple[TokenInfo, str]:
    """Issue a bearer token for ``principal``; returns its info and the token (shown once, stored only hashed)."""
    name = _check_principal(principal)
    if not isinstance(label, str) or len(label) > 200 or "\x00" in label:
        raise InvalidArgument("label must be a string of at most 200 characters")
    token_id = secrets.token_hex(6)
    token = f"{_PREFIX}{token_id}_{secrets.token_urlsafe(32)}"
    with store.engine.begin() as c:
        c.execute(_INSERT, {"id": token_id, "p": name, "h": _digest(token), "label": label})
    info = next(t for t in list_tokens(store, principal=name) if t.id == token_id)
    return info, token


def list_tokens(store: Substrate, *, principal: str | None = None, include_revoked: bool = False) -> list[TokenInfo]:
    """Tokens in issue order (optionally one principal's; revoked ones only with ``include_revoked``)."""
    if principal is not None:
        require_name(principal, "principal")
    with store.engine.connect() as c:
        rows = c.execute(text(_LIST), {"p": principal, "all": bool(include_revoked)}).all()
    return [TokenInfo(*row) for row in rows]


def revoke_token(store: Substrate, token_id: str) -> bool:
    """Revoke a token by its id (effective on the next request); False when no live token has that id."""
    require_name(token_id, "token id")
    with store.engine.begin() as c:
        return c.execute(_REVOKE, {"id": token_id}).rowcount == 1


def authenticate(store: Substrate, token: str) -> Principal | None:
    """The principal a live bearer token belongs to, with its readable/writable scopes; None for any bad token."""
    if not isinstance(token, str) or not token.startswith(_PREFIX) or len(token) > _MAX_TOKEN:
        return None
    with reader(store.engine).connect() as c:
        row = c.execute(_AUTH, {"h": _digest(token)}).first()
    if row is None:
        return None
    token_id, name, reads, writes = row
    # Home scope and the PUBLIC commons are intrinsic (service.domain.policy, as the write door decides); grants
    # add the rest.
    return Principal(name, token_id, rules.scopes_with(name, reads), rules.scopes_with(name, writes))
