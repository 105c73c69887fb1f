"""The access rules, pure: which principal may read, write, administer or approve which scope, and what each event
needs before it may enter the log.

Nothing here reads the database: the write door (service.substrate) reads a principal's persisted standing
(service.store.authority) and asks these functions; HTTP, ``Space`` and ``AccessPolicy`` decide with the same ones.

- read / write: a principal's home scope (its own name) and ``public`` always; any other scope by a grant.
- administer (grant and revoke access and approvers): the scope's owner (the principal whose home scope it is;
  ``public`` has none), a principal granted ``admin`` on it, and the operator named at set-up, who administers
  every scope (``public`` and scopes nobody owns included). Nobody claims a scope by being first.
- approve: the approvers of the target scope, as granted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from projections.items import ITEM_EVENTS  # the events carrying an item's resulting state under "item"
from service.domain.errors import AccessDeniedError, GovernanceAuthorizationError, InvalidArgument
from service.domain.events import NewEvent

__all__ = [
    "ADMINISTER",
    "APPROVE",
    "PUBLIC",
    "READ",
    "WRITE",
    "Need",
    "Pending",
    "Standing",
    "check",
    "intrinsic",
    "needs",
    "owner",
    "scopes_with",
]

PUBLIC = "public"
READ, WRITE, ADMINISTER, APPROVE = "read", "write", "administer", "approve"
# Of those, the ones a writer of the item's scopes may append (the promotion decisions have rules of their own).
_WRITES = ITEM_EVENTS - {"PromotionProposed", "PromotionApproved", "PromotionRejected", "ItemPublished"}


def intrinsic(principal: str, scope: str) -> bool:
    """Whether ``principal`` reads and writes ``scope`` whatever the grants say: its home scope, and ``public``."""
    return scope == principal or scope == PUBLIC


def owner(scope: str) -> str | None:
    """The principal that owns ``scope`` (the one whose home scope it is); None for ``public``."""
    return None if scope == PUBLIC else scope


def scopes_with(principal: str, granted: Iterable[str]) -> frozenset[str]:
    """The scopes ``principal`` may read (or write), given the scopes granted to it for that."""
    return frozenset({principal, PUBLIC, *granted})


@dataclass(frozen=True)
class Standing:
    """What the persisted grants give one principal: the scopes granted to it per mode, and whether it is the
    operator (named at set-up)."""

    principal: str
    read: frozenset[str] = frozenset()
    write: frozenset[str] = frozenset()
    admin: frozenset[str] = frozenset()
    approve: frozenset[str] = frozenset()
    operator: bool = False

    def may(self, mode: str, scope: str) -> bool:
        """Whether this principal may ``mode`` (read, write, administer, approve) ``scope``."""
        if mode == READ:
            return intrinsic(self.principal, scope) or scope in self.read
        if mode == WRITE:
            return intrinsic(self.principal, scope) or scope in self.write
        if mode == ADMINISTER:
            return self.operator or owner(scope) == self.principal or scope in self.admin
        if mode == APPROVE:
            return scope in self.approve
        raise InvalidArgument(f"mode must be one of read, write, administer, approve; got {mode!r}")


@dataclass(frozen=True)
class Pending:
    """An item's pending promotion: the scope it is proposed to, and who proposed it."""

    to: str
    proposer: str


@dataclass(frozen=True)
class Need:
    """One thing an event needs: ``mode`` on ``scope``, unless the actor is ``unless`` (withdrawing its own)."""

    mode: str
    scope: str
    why: str
    unless: str | None = None


def needs(
    events: Sequence[NewEvent], actor: str, live: Mapping[str, str], pending: Mapping[str, Pending]
) -> list[Need]:
    """What ``events``, appended by ``actor``, need: ``live`` maps each item stream to its live item's scope,
    ``pending`` each item with a pending promotion to it. An event no rule covers is refused."""
    approving = {e.stream for e in events if e.event.type_name == "PromotionApproved"}
    out: list[Need] = []
    for e in events:
        kind, data = e.event.type_name, e.event.to_data()
        here = live.get(e.stream)
        if kind in _WRITES or (kind == "ItemPublished" and e.stream not in approving):
            out.append(Need(WRITE, str(e.scope), f"{kind} writes item {e.stream!r} into it"))
            if here is not None and here != e.scope:
                out.append(Need(WRITE, here, f"{kind} takes item {e.stream!r} out of it"))
        elif kind == "ItemRemoved":
            out.append(Need(WRITE, here if here is not None else str(e.scope), f"removes item {e.stream!r}"))
        elif kind == "PromotionProposed":
            out.append(Need(WRITE, here if here is not None else str(e.scope), f"proposes item {e.stream!r}"))
        elif kind in ("ItemPublished", "PromotionApproved", "PromotionRejected"):
            out.append(_decision(kind, e, data, pending.get(e.stream)))
        elif kind in ("AccessGranted", "ApproverGranted", "ApproverRevoked"):
            if kind != "AccessGranted" and data.get("by") != actor:
                raise AccessDeniedError(actor, data.get("scope"), ADMINISTER, f"{kind} must name {actor!r} as by")
            out.append(Need(ADMINISTER, str(data.get("scope")), kind))
        elif kind == "AccessRevoked":
            out.append(Need(ADMINISTER, str(data.get("scope")), kind, unless=data.get("principal")))
        else:
            raise AccessDeniedError(actor, e.scope, WRITE, f"no access rule covers a {kind} event")
    return out


def _decision(kind: str, e: NewEvent, data: dict[str, Any], open_: Pending | None) -> Need:
    """A promotion decision decides the item's pending proposal, into the scope it names: an approver's call (or,
    to reject, also its proposer's); the publish an approval makes is the approval's."""
    raw = data.get("entry")
    entry: dict[str, Any] = raw if isinstance(raw, dict) else {}
    target = str(e.scope) if kind == "ItemPublished" else str(entry.get("to"))
    if open_ is None or open_.to != target:
        raise GovernanceAuthorizationError(
            str(entry.get("by", "")), target, "decide promotion", f"item {e.stream!r} has no pending proposal to it"
        )
    return Need(
        APPROVE, target, f"{kind} of item {e.stream!r}", unless=open_.proposer if kind == "PromotionRejected" else None
    )


def check(standing: Standing, wanted: Iterable[Need]) -> None:
    """Raise unless ``standing`` meets every need: AccessDeniedError, or GovernanceAuthorizationError (approvals)."""
    for need in wanted:
        if need.unless is not None and need.unless == standing.principal:
            continue
        if standing.may(need.mode, need.scope):
            continue
        if need.mode == APPROVE:
            raise GovernanceAuthorizationError(standing.principal, need.scope, "approve promotion", need.why)
        raise AccessDeniedError(standing.principal, need.scope, need.mode, need.why)
