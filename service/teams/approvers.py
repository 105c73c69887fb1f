"""Who may approve promotions into which scope (MXR-080-1883): the Governance ACL, and its persisted form, the
approver grants and revocations an administrator records."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from service.domain.errors import AccessDeniedError, ConcurrencyError, GovernanceAuthorizationError
from service.domain.events import ApproverGranted, ApproverRevoked, NewEvent
from service.domain.retry import retries
from service.domain.validation import require_name
from service.store import records
from service.store.database import reader
from service.teams.sharing import acting_principal

if TYPE_CHECKING:
    from service.substrate import Substrate

__all__ = ["Governance", "grant_approver", "list_approvers", "revoke_approver", "stored_governance"]


@dataclass
class Governance:
    """Who may approve promotions into which scope: a read-only ACL whose only way in is the audited grant()."""

    _approvers: dict[str, set[str]] = field(default_factory=dict)
    _grants: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        # Own copies: a caller keeping a reference to what it passed in cannot edit the ACL or its trail.
        self._approvers = {
            require_name(s, "scope"): {require_name(w, "approver") for w in ws}
            for s, ws in dict(self._approvers).items()
        }
        self._grants = [dict(g) for g in self._grants]

    @property
    def approvers(self) -> Mapping[str, frozenset[str]]:
        """The live ACL, as a read-only view."""
        return MappingProxyType({s: frozenset(ws) for s, ws in self._approvers.items()})

    @property
    def grants(self) -> tuple[Mapping[str, Any], ...]:
        """The append-only grant audit trail (who, scope, by, bootstrap, granted_at), as a read-only view."""
        return tuple(MappingProxyType(dict(g)) for g in self._grants)

    def may_approve(self, who: str, scope: str) -> bool:
        """Return whether who is allowed to approve (or reject) promotion into scope."""
        return require_name(who, "who") in self._approvers.get(require_name(scope, "scope"), ())

    def _check_grant(self, who: Any, scope: Any, by: Any) -> dict[str, Any]:
        who, scope, by = require_name(who, "who"), require_name(scope, "scope"), acting_principal(by)
        owners = self._approvers.get(scope)
        if owners and by not in owners:
            raise GovernanceAuthorizationError(by, scope, "grant approvers", "only an existing approver may")
        # An unowned scope may be claimed by anyone: recorded as a bootstrap, never passed off as authorized.
        return {"who": who, "scope": scope, "by": by, "bootstrap": not owners}

    def _record(self, entry: Mapping[str, Any]) -> None:
        self._approvers.setdefault(entry["scope"], set()).add(entry["who"])
        self._grants.append(dict(entry))

    def _forget(self, who: str, scope: str) -> None:
        """A persisted revocation (revoke_approver): ``who`` no longer approves into ``scope``; the trail keeps its
        grant."""
        remaining = self._approvers.get(scope, set()) - {who}
        if remaining:
            self._approvers[scope] = remaining
        else:
            self._approvers.pop(scope, None)

    def grant(self, who: str, scope: str, *, by: str) -> Governance:
        """Add who as an approver for scope (chainable): audited (with its time), and only by an existing approver
        once owned."""
        self._record({**self._check_grant(who, scope, by), "granted_at": time.time()})
        return self


def stored_governance(store: Substrate) -> Governance:
    """The governance state rebuilt from the ApproverGranted/ApproverRevoked events (the ``approvers`` read model)."""
    gov = Governance()
    with store.engine.connect() as c:
        for who, scope, by, bootstrap, at, revoked in records.approvers(c, store.as_of_seq):
            if revoked:
                gov._forget(who, scope)
            else:
                gov._record({"who": who, "scope": scope, "by": by, "bootstrap": bool(bootstrap), "granted_at": at})
    return gov


def _entry(store: Substrate, who: Any, scope: str, by: Any) -> dict[str, Any]:
    """The ApproverGranted entry: on a trusted store gated like Governance.grant (the spec's rule, bootstrap
    included); on a principal-bound handle the write door decides instead (administrators only), and nothing is
    ever a bootstrap."""
    if not store.restricted:
        return stored_governance(store)._check_grant(who, scope, by)
    return {"who": require_name(who, "who"), "scope": scope, "by": acting_principal(by), "bootstrap": False}


def grant_approver(store: Substrate, who: str, scope: str, *, by: str) -> int:
    """Persist an approver grant (gated like Governance.grant) as an ApproverGranted event; returns its position.

    On a handle bound to a principal (with_principal(), HTTP) only an administrator of ``scope`` may grant: its
    owner, an admin the operator made, or the operator (service.domain.policy); nobody claims a scope by being first.
    """
    scope = require_name(scope, "scope")
    stream = f"governance:{scope}"
    for _ in retries():
        version = store.events.stream_version(stream)
        entry = _entry(store, who, scope, by)
        event = NewEvent(stream, ApproverGranted(**entry), scope=scope, expected_version=version)
        try:
            return store.append([event], by=entry["by"])[0].seq
        except ConcurrencyError:
            continue  # e.g. two bootstraps racing: the loser is re-checked against the winner's grant
    raise ConcurrencyError(stream, -1, f"approver grant on {scope!r} kept colliding; gave up")


def revoke_approver(store: Substrate, who: str, scope: str, *, by: str) -> bool:
    """Persist that ``who`` no longer approves into ``scope`` (an ApproverRevoked event); False if it did not.

    On a trusted store an existing approver of the scope may revoke (as only one may grant once it is owned); on a
    principal-bound handle an administrator of the scope (service.domain.policy).
    """
    who, scope, by = require_name(who, "who"), require_name(scope, "scope"), acting_principal(by)
    stream = f"governance:{scope}"
    if store.restricted and not store.allows("administer", scope):
        raise AccessDeniedError(by, scope, "administer", "only an administrator of a scope may revoke its approvers")
    for _ in retries():
        version = store.events.stream_version(stream)
        gov = stored_governance(store)
        if not gov.may_approve(who, scope):
            return False
        if not store.restricted and not gov.may_approve(by, scope):
            raise GovernanceAuthorizationError(by, scope, "revoke approvers", "only an existing approver may")
        event = NewEvent(stream, ApproverRevoked(who=who, scope=scope, by=by), scope=scope, expected_version=version)
        try:
            store.append([event], by=by)
            return True
        except ConcurrencyError:
            continue
    raise ConcurrencyError(stream, -1, f"approver revocation on {scope!r} kept colliding; gave up")


# Each (scope, who)'s latest approvers row up to :at (None: the latest), when it is a grant.
_LIVE_APPROVERS = text(
    "SELECT scope, who, by, seq, bootstrap FROM (SELECT DISTINCT ON (scope, who) scope, who, by, seq, bootstrap, "
    "revoked FROM approvers WHERE (CAST(:s AS text) IS NULL OR scope = :s) "
    "AND (CAST(:at AS bigint) IS NULL OR seq <= :at) ORDER BY scope, who, seq DESC) a "
    "WHERE NOT revoked ORDER BY scope, who"
)


def list_approvers(store: Substrate, *, scope: str | None = None) -> list[dict[str, Any]]:
    """The live approvers (optionally of one scope), as of the view's position on a time-travel view:
    ``{scope, who, by, since_seq, bootstrap}`` of each one's latest grant, by scope then approver."""
    if scope is not None:
        require_name(scope, "scope")
    with reader(store.engine).connect() as c:
        rows = c.execute(_LIVE_APPROVERS, {"s": scope, "at": store.as_of_seq}).all()
    return [{"scope": s, "who": w, "by": b, "since_seq": int(n), "bootstrap": bool(boot)} for s, w, b, n, boot in rows]
