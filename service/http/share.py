"""Write routes beyond single items: publish, merge, promotion proposals, belief evidence."""

from __future__ import annotations

from fastapi import APIRouter

from service.beliefs.commands import assimilate
from service.http.auth import Caller, CallerDep
from service.http.errors import ProblemError, not_found
from service.http.models import PathText, Written
from service.http.sharemodels import (
    ApproveIn,
    AssimilateIn,
    BeliefOut,
    DecisionOut,
    MergeIn,
    ProposeIn,
    ProposeOut,
    PublishIn,
    PublishOut,
    RejectIn,
)
from service.teams.access import stored_policy
from service.teams.governance import approve, proposal_history, propose, reject, stored_governance
from service.teams.sharing import merge_versions, publish

__all__ = ["router"]

router = APIRouter(tags=["sharing"])


def _seq(caller: Caller) -> int:
    """The log position of the caller's last write (the head when the request wrote nothing)."""
    return caller.store.position or caller.live.events.head()


@router.post("/publish", response_model=PublishOut, summary="Share items into another scope")
def publish_items(caller: CallerDep, body: PublishIn) -> PublishOut:
    """Publish items into ``to`` (write access to ``to`` required); items the caller may not move (it must write
    their scope: publishing takes them out of it), unreadable and missing ids are skipped."""
    caller.require_write_target(body.to)
    if body.from_scope is not None:
        caller.require_read(body.from_scope, f"scope {body.from_scope!r}")
    done = publish(
        caller.store,
        body.ids,
        to=body.to,
        by=caller.name,
        from_scope=body.from_scope,
        policy=stored_policy(caller.live, live=True),
    )
    return PublishOut(published=done, seq=_seq(caller))


@router.post("/merge", response_model=Written, summary="Merge one item into another")
def merge(caller: CallerDep, body: MergeIn) -> Written:
    """Merge ``other`` into ``keep`` (both scopes writable; ``confirm`` must be true: ``other`` is removed)."""
    for item_id in (body.keep, body.other):
        item = caller.live.get(item_id)
        if item is None or not caller.principal.can_read(item.scope):
            raise not_found(f"item {item_id!r} not found")
    kept = merge_versions(
        caller.store,
        body.keep,
        body.other,
        by=caller.name,
        prefer=body.prefer,
        policy=stored_policy(caller.live, live=True),
        confirm=body.confirm,
    )
    if kept is None:  # removed by a concurrent writer after the check above
        raise not_found(f"item {body.keep!r} or {body.other!r} not found")
    return Written(id=kept, seq=_seq(caller))


@router.post("/proposals", response_model=ProposeOut, summary="Propose items for promotion")
def propose_items(caller: CallerDep, body: ProposeIn) -> ProposeOut:
    """Mark items the caller may write as pending promotion into ``to``; unreadable or missing ids are skipped."""
    if not body.to.strip():
        raise ProblemError(422, "to must be a non-empty scope name")
    found = caller.live.get_many(list(dict.fromkeys(body.ids)))
    mine = []
    for item_id in dict.fromkeys(body.ids):
        item = found.get(item_id)
        if item is None or not caller.principal.can_read(item.scope):
            continue  # indistinguishable from a missing id, as in publish()
        caller.require_write(item.scope, f"item {item_id!r}")
        mine.append(item_id)
    done = propose(caller.store, mine, to=body.to, by=caller.name) if mine else []
    return ProposeOut(proposed=done, seq=_seq(caller))


def _visible_proposal(caller: Caller, item_id: PathText) -> None:
    """404 unless the caller can read the item or may approve its pending proposal's target scope."""
    item = caller.live.get(item_id)
    if item is None:
        raise not_found(f"item {item_id!r} not found")
    if caller.principal.can_read(item.scope):
        return
    entries = proposal_history(caller.live, item_id)
    pending = entries[-1] if entries and entries[-1]["status"] == "pending" else None
    if pending is None or not stored_governance(caller.live).may_approve(caller.name, pending["to"]):
        raise not_found(f"item {item_id!r} not found")


@router.post("/proposals/{item_id}/approve", response_model=DecisionOut, summary="Approve a pending promotion")
def approve_proposal(caller: CallerDep, item_id: PathText, body: ApproveIn | None = None) -> DecisionOut:
    """Publish the pending item into its proposed scope (the caller must be an approver there)."""
    _visible_proposal(caller, item_id)
    if not approve(
        caller.store,
        item_id,
        by=caller.name,
        governance=stored_governance(caller.live),
        to=body.to if body is not None else None,
    ):
        raise ProblemError(409, f"item {item_id!r} has no pending proposal")
    return DecisionOut(id=item_id, status="approved", seq=_seq(caller))


@router.post("/proposals/{item_id}/reject", response_model=DecisionOut, summary="Reject a pending promotion")
def reject_proposal(caller: CallerDep, item_id: PathText, body: RejectIn | None = None) -> DecisionOut:
    """Refuse the pending promotion (its proposer withdraws, or an approver of the target rejects)."""
    _visible_proposal(caller, item_id)
    if not reject(
        caller.store,
        item_id,
        by=caller.name,
        governance=stored_governance(caller.live),
        reason=body.reason if body is not None else "",
    ):
        raise ProblemError(409, f"item {item_id!r} has no pending proposal")
    return DecisionOut(id=item_id, status="rejected", seq=_seq(caller))


@router.post("/beliefs/assimilate", response_model=BeliefOut, tags=["beliefs"], summary="Add evidence to a belief")
def assimilate_evidence(caller: CallerDep, body: AssimilateIn) -> BeliefOut:
    """Find or create the belief in ``claim`` within ``scope`` (default: home) and apply the evidence entries."""
    scope = body.scope if body.scope is not None else caller.name
    if not scope.strip():
        raise ProblemError(422, "scope must be a non-empty string")
    caller.require_write_target(scope)  # (before resolving any evidence; the door checks again)
    entries = [e.model_dump(exclude_none=True) for e in body.evidence]
    belief = assimilate(caller.store, body.claim, entries, scope=scope, policy=stored_policy(caller.live, live=True))
    return BeliefOut(**belief.as_dict(), seq=_seq(caller))
