"""The access-policy decision point (MXR-080-0264): in memory, or persisted as AccessGranted/AccessRevoked events.

The rules themselves are service.domain.policy's, which the write door applies too: an AccessPolicy, a Space, the
HTTP layer and a principal-bound handle decide the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from service.domain import policy as rules
from service.domain.errors import AccessDeniedError, ConcurrencyError, ReadOnlyError
from service.domain.events import AccessGranted, AccessRevoked, NewEvent
from service.domain.retry import retries
from service.domain.validation import InvalidArgument, require_name
from service.store import records
from service.store.database import reader

if TYPE_CHECKING:
    from service.substrate import Substrate

__all__ = [
    "ACCESS_MODES",
    "PUBLIC",
    "AccessDeniedError",
    "AccessPolicy",
    "grant_access",
    "list_access",
    "require_principal",
    "revoke_access",
    "stored_policy",
    "visible_scopes",
]

PUBLIC = rules.PUBLIC
# The modes an AccessGranted event may carry; "readwrite" is the persisted form of AccessPolicy.grant(), "admin"
# makes the principal an administrator of the scope (it also reads and writes it).
ACCESS_MODES = ("read", "write", "readwrite", "admin")


def _absent(name: Any) -> bool:
    """Whether ``name`` is no name at all (None, empty or blank): an identity no policy can ever authorize."""
    return name is None or (isinstance(name, str) and not name.strip())


def require_principal(by: Any, scope: str, mode: str, *, name: str = "by", detail: str = "") -> str:
    """``by`` as an acting principal: an empty or missing one is refused (AccessDeniedError), a non-string is invalid."""
    if _absent(by):
        raise AccessDeniedError(by, scope, mode, detail)
    return require_name(by, name)


def _names(principal: Any, scope: Any) -> tuple[str, str]:
    return require_name(principal, "principal"), require_name(scope, "scope")


@dataclass
class AccessPolicy:
    """The one place that decides whether a principal may read or write a scope (home scope and PUBLIC always)."""

    _read: dict[str, set[str]] = field(default_factory=dict)
    _write: dict[str, set[str]] = field(default_factory=dict)

    def _granted(self, principal: str, scope: str, mode: str) -> bool:
        table = self._read if mode == "read" else self._write
        return scope in table.get(principal, ())

    def _add(self, table: dict[str, set[str]], principal: Any, scope: Any) -> AccessPolicy:
        p, s = _names(principal, scope)
        table.setdefault(p, set()).add(s)
        return self

    def grant_read(self, principal: str, scope: str) -> AccessPolicy:
        """Grant principal read access to scope beyond its home scope and PUBLIC (chainable)."""
        return self._add(self._read, principal, scope)

    def grant_write(self, principal: str, scope: str) -> AccessPolicy:
        """Grant principal write access to scope beyond its home scope and PUBLIC (chainable)."""
        return self._add(self._write, principal, scope)

    def grant(self, principal: str, scope: str) -> AccessPolicy:
        """Grant principal both read and write access to scope (chainable)."""
        return self.grant_read(principal, scope).grant_write(principal, scope)

    def revoke(self, principal: str, scope: str) -> AccessPolicy:
        """Revoke both grants of scope from principal (chainable); home scope and PUBLIC are never revocable."""
        p, s = _names(principal, scope)
        for table in (self._read, self._write):
            table.get(p, set()).discard(s)
        return self

    def _may(self, principal: Any, scope: Any, mode: str) -> bool:
        # No identity (an empty or missing principal or scope) is a denial, not an error; a non-string still raises.
        if _absent(principal) or _absent(scope):
            return False
        p, s = _names(principal, scope)
        return rules.intrinsic(p, s) or self._granted(p, s, mode)

    def can_read(self, principal: str, scope: str) -> bool:
        """Whether principal may read items in scope (never an empty or missing principal)."""
        return self._may(principal, scope, "read")

    def can_write(self, principal: str, scope: str) -> bool:
        """Whether principal may write (add or publish) items into scope (never an empty or missing principal)."""
        return self._may(principal, scope, "write")

    def require_read(self, principal: str, scope: str) -> None:
        """Raise AccessDeniedError unless principal may read scope."""
        if not self.can_read(principal, scope):
            raise AccessDeniedError(principal, scope, "read")

    def require_write(self, principal: str, scope: str) -> None:
        """Raise AccessDeniedError unless principal may write scope."""
        if not self.can_write(principal, scope):
            raise AccessDeniedError(principal, scope, "write")

    def readable(self, principal: str, scopes: Iterable[str]) -> set[str]:
        """The subset of ``scopes`` principal may read right now (one decision for the whole set)."""
        return {s for s in scopes if self.can_read(principal, s)}


def visible_scopes(team: str, *, shared: Sequence[str] = (PUBLIC,)) -> set[str]:
    """The scopes a team may read: its own id plus ``shared`` (pure; Space validates shared against a policy)."""
    require_name(team, "team")
    if isinstance(shared, str):
        raise InvalidArgument("shared must be a sequence of scope names, not a single string")
    return {team, *(require_name(s, "shared scope") for s in shared)}


# ------------------------------------------------------------------ the persisted form
def _acl_stream(scope: str) -> str:
    return f"acl:{scope}"


class _LivePolicy(AccessPolicy):
    """A read-only view of the persisted grants, re-read at every decision (revocations apply at once)."""

    def __init__(self, store: Substrate) -> None:
        super().__init__()
        self._store = store

    def _granted(self, principal: str, scope: str, mode: str) -> bool:
        with reader(self._store.engine).connect() as c:
            can_read, can_write = records.grant(c, principal, scope, self._store.as_of_seq)
        return can_read if mode == "read" else can_write

    def readable(self, principal: str, scopes: Iterable[str]) -> set[str]:
        wanted = {s for s in scopes if not _absent(s)}
        if _absent(principal):
            return set()
        p = require_name(principal, "principal")
        out = {s for s in wanted if rules.intrinsic(p, require_name(s, "scope"))}
        with reader(self._store.engine).connect() as c:
            out.update(records.granted_readable(c, p, sorted(wanted - out), self._store.as_of_seq))
        return out

    def _add(self, table: dict[str, set[str]], principal: Any, scope: Any) -> AccessPolicy:
        raise ReadOnlyError("a live stored policy is read-only: persist grants with grant_access(store, ..., by=)")

    def revoke(self, principal: str, scope: str) -> AccessPolicy:
        raise ReadOnlyError(
            "a live stored policy is read-only: persist revocations with revoke_access(store, ..., by=)"
        )


def stored_policy(store: Substrate, *, live: bool = False) -> AccessPolicy:
    """The store's current policy from the ``grants`` read model: a snapshot, or (live=True) a read-only live view."""
    if live:
        return _LivePolicy(store)
    policy = AccessPolicy()
    with store.engine.connect() as c:
        for principal, scope, can_read, can_write in records.grants(c, store.as_of_seq):
            if can_read:
                policy._read.setdefault(principal, set()).add(scope)
            if can_write:
                policy._write.setdefault(principal, set()).add(scope)
    return policy


def _may_administer(store: Substrate, by: str, scope: str) -> bool:
    # The spec's rule, kept on a trusted store: whoever may write a scope may open or close it to others. A bound
    # handle asks the write door's rule instead (administrators only: service.domain.policy), as the door will.
    if store.restricted:
        return store.allows("administer", scope)
    return _LivePolicy(store).can_write(by, scope)


def grant_access(store: Substrate, principal: str, scope: str, mode: str = "readwrite", *, by: str) -> int:
    """Persist a grant as an AccessGranted event (``by`` must be able to write ``scope``; on a handle bound to a
    principal, administer it); returns its log position."""
    p, s = _names(principal, scope)
    by = require_name(by, "by")
    if mode not in ACCESS_MODES:
        raise InvalidArgument(f"mode must be one of {ACCESS_MODES}, got {mode!r}")
    for _ in retries():
        version = store.events.stream_version(_acl_stream(s))
        if not _may_administer(store, by, s):
            raise AccessDeniedError(by, s, *_refusal(store, "grant"))
        event = NewEvent(
            _acl_stream(s), AccessGranted(principal=p, scope=s, mode=mode), scope=s, expected_version=version
        )
        try:
            return store.append([event], by=by)[0].seq
        except ConcurrencyError:
            continue
    raise ConcurrencyError(_acl_stream(s), -1, f"grant on {s!r} kept colliding with other writers; gave up")


def revoke_access(store: Substrate, principal: str, scope: str, *, by: str) -> bool:
    """Persist the revocation of principal's grants on scope (by its administrator or itself); False if none."""
    p, s = _names(principal, scope)
    by = require_name(by, "by")
    for _ in retries():
        version = store.events.stream_version(_acl_stream(s))
        if by != p and not _may_administer(store, by, s):
            raise AccessDeniedError(by, s, *_refusal(store, "revoke"))
        with store.engine.connect() as c:
            held = c.execute(text("SELECT 1 FROM grants WHERE principal = :p AND scope = :s"), {"p": p, "s": s}).first()
        if held is None:
            return False
        event = NewEvent(_acl_stream(s), AccessRevoked(principal=p, scope=s), scope=s, expected_version=version)
        try:
            store.append([event], by=by)
            return True
        except ConcurrencyError:
            continue
    raise ConcurrencyError(_acl_stream(s), -1, f"revoke on {s!r} kept colliding with other writers; gave up")


def _refusal(store: Substrate, what: str) -> tuple[str, str]:
    if store.restricted:
        return "administer", f"only an administrator of a scope may {what} access to it"
    return "write", f"only a principal that may write a scope may {what} access to it"


def list_access(store: Substrate, *, scope: str | None = None) -> list[dict[str, Any]]:
    """The persisted grants (optionally on one scope), as of the view's position on a time-travel view:
    ``{principal, scope, mode, seq}``, by scope then principal; ``mode`` is "admin", "readwrite", "read" or "write"."""
    if scope is not None:
        require_name(scope, "scope")
    with reader(store.engine).connect() as c:
        rows = records.access_rows(c, scope, store.as_of_seq)
    return [{"principal": p, "scope": s, "mode": _mode(r, w, a), "seq": int(n)} for p, s, r, w, a, n in rows]


def _mode(read: bool, write: bool, admin: bool) -> str:
    if admin:
        return "admin"
    return "readwrite" if read and write else ("read" if read else "write")
