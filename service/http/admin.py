"""Administration routes: grant and revoke access and approvers, and list them; each change an event through the
write door, which lets only an administrator of the scope make it (its owner, an admin the operator made, or the
operator named at set-up: service.domain.policy)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import AfterValidator

from service.http.adminmodels import (
    AccessIn,
    AccessList,
    AccessOut,
    AccessRevokeIn,
    ApproverIn,
    ApproverList,
    ApproverOut,
    Granted,
    Revoked,
)
from service.http.auth import Caller, CallerDep
from service.http.items import AsOf
from service.http.models import storable
from service.http.views import read_view
from service.teams.access import grant_access, list_access, revoke_access
from service.teams.approvers import grant_approver, list_approvers, revoke_approver

__all__ = ["router"]

router = APIRouter(prefix="/admin", tags=["administration"])
ScopeFilter = Annotated[str | None, Query(max_length=512, description="only this scope"), AfterValidator(storable)]


def _seq(caller: Caller) -> int:
    return caller.store.position or caller.live.events.head()


@router.get("/access", response_model=AccessList, summary="List access grants")
def list_grants(caller: CallerDep, scope: ScopeFilter = None, as_of: AsOf = None) -> AccessList:
    """The grants on every scope the caller administers, and the caller's own grants elsewhere (as of ``as_of``:
    the grants then, shown to whom may see them now)."""
    standing = caller.store.standing()
    with read_view(caller.live, as_of) as (view, seq):
        found = list_access(view, scope=scope)
    rows = [g for g in found if g["principal"] == caller.name or standing.may("administer", g["scope"])]
    return AccessList(grants=[AccessOut(**g) for g in rows], as_of=seq)


@router.post("/access", status_code=201, response_model=Granted, summary="Grant access to a scope")
def grant(caller: CallerDep, body: AccessIn) -> Granted:
    """Grant ``principal`` read, write, readwrite or admin on ``scope`` (the caller must administer it)."""
    return Granted(seq=grant_access(caller.store, body.principal, body.scope, body.mode, by=caller.name))


@router.post("/access/revoke", response_model=Revoked, summary="Revoke access to a scope")
def revoke(caller: CallerDep, body: AccessRevokeIn) -> Revoked:
    """Revoke every grant of ``principal`` on ``scope`` (by an administrator of it, or the principal itself)."""
    done = revoke_access(caller.store, body.principal, body.scope, by=caller.name)
    return Revoked(revoked=done, seq=_seq(caller))


@router.get("/approvers", response_model=ApproverList, summary="List approvers")
def approvers(caller: CallerDep, scope: ScopeFilter = None, as_of: AsOf = None) -> ApproverList:
    """The live approvers of every scope the caller administers or approves into (as of ``as_of``: those then)."""
    standing = caller.store.standing()
    with read_view(caller.live, as_of) as (view, seq):
        found = list_approvers(view, scope=scope)
    rows = [a for a in found if standing.may("administer", a["scope"]) or standing.may("approve", a["scope"])]
    return ApproverList(approvers=[ApproverOut(**a) for a in rows], as_of=seq)


@router.post("/approvers", status_code=201, response_model=Granted, summary="Make a principal an approver")
def add_approver(caller: CallerDep, body: ApproverIn) -> Granted:
    """Make ``who`` an approver of promotions into ``scope`` (the caller must administer it)."""
    return Granted(seq=grant_approver(caller.store, body.who, body.scope, by=caller.name))


@router.post("/approvers/revoke", response_model=Revoked, summary="Remove an approver")
def remove_approver(caller: CallerDep, body: ApproverIn) -> Revoked:
    """``who`` no longer approves promotions into ``scope`` (the caller must administer it)."""
    done = revoke_approver(caller.store, body.who, body.scope, by=caller.name)
    return Revoked(revoked=done, seq=_seq(caller))
