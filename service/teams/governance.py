"""Promotion governance: the append-only proposal history, and its decisions by the approvers of the target scope
(MXR-080-1883; who approves where is service.teams.approvers')."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from projections import loads
from service.domain.errors import ApprovalRedirectError, ConcurrencyError, GovernanceAuthorizationError
from service.domain.events import (
    ItemPublished,
    NewEvent,
    PromotionApproved,
    PromotionProposed,
    PromotionRejected,
)
from service.domain.items import SubstrateItem
from service.domain.retry import retries
from service.domain.validation import InvalidArgument, require_name
from service.store import records
from service.teams.approvers import Governance, grant_approver, list_approvers, revoke_approver, stored_governance
from service.teams.sharing import LiveItem, acting_principal, item_ids, live_items, published_state

if TYPE_CHECKING:
    from service.substrate import Substrate

__all__ = [
    "APPROVED",
    "PENDING",
    "REJECTED",
    "ApprovalRedirectError",
    "AuthorizationDecision",
    "Governance",
    "GovernanceAuthorizationError",
    "approve",
    "authorization_decision",
    "grant_approver",
    "list_approvers",
    "pending",
    "proposal_history",
    "propose",
    "reject",
    "revoke_approver",
    "stored_governance",
]

# A proposal record's status: awaiting review, then decided one way or the other (a new record each time).
PENDING, APPROVED, REJECTED = "pending", "approved", "rejected"
PROPOSAL_HISTORY = "proposal_history"  # the provenance key mirroring the item's proposal history
PROPOSAL = "proposal"  # the provenance key holding its latest record


# ------------------------------------------------------------------ proposals
def proposal_history(substrate: Substrate, item_id: str) -> list[dict[str, Any]]:
    """Every proposal/approval/rejection entry of an item, oldest first (append-only; never rewritten)."""
    item_id = require_name(item_id, "item_id")
    with substrate.engine.connect() as c:
        return [{**loads(e), "seq": int(s)} for e, s, _ in records.proposal_entries(c, item_id, substrate.as_of_seq)]


def _open(substrate: Substrate, item_id: str) -> tuple[LiveItem, dict[str, Any], list[dict[str, Any]]] | None:
    """The live item, its pending entry and full history, or None when nothing is pending."""
    live = live_items(substrate, [item_id]).get(item_id)
    if live is None:
        return None
    entries = proposal_history(substrate, item_id)
    if not entries or entries[-1]["status"] != PENDING:
        return None
    return live, entries[-1], entries


def _mirrored(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The history as the item's provenance shows it, in the spec's store's record shape: each record numbered by
    its position (``seq``, from 1), a decision naming the record it decides (``supersedes``) and its decider
    (``approved_by`` / ``rejected_by``)."""
    out: list[dict[str, Any]] = []
    for n, e in enumerate(entries, start=1):
        record = {k: v for k, v in e.items() if k not in ("seq", "decides")}
        record["seq"] = n
        if e["status"] != PENDING:
            record["supersedes"] = n - 1  # a decision always directly follows the pending record it decides
            record[f"{e['status']}_by"] = e["by"]
        out.append(record)
    return out


def _with_history(item: SubstrateItem | dict[str, Any], entries: list[dict[str, Any]]) -> SubstrateItem:
    """``item`` carrying its proposal history in provenance, and the latest record as ``proposal``."""
    base = item if isinstance(item, SubstrateItem) else SubstrateItem(**item)
    mirrored = _mirrored(entries)
    return dataclasses.replace(
        base, provenance={**base.provenance, PROPOSAL_HISTORY: mirrored, PROPOSAL: dict(mirrored[-1])}
    )


def propose(substrate: Substrate, ids: Sequence[str], *, to: str, by: str) -> list[str]:
    """Mark items as pending promotion to ``to`` (not yet visible there); items already pending are skipped."""
    to, by, wanted = require_name(to, "to"), acting_principal(by), item_ids(ids)
    done = []
    for item_id in wanted:
        for _ in retries():
            live = live_items(substrate, [item_id]).get(item_id)
            entries = proposal_history(substrate, item_id) if live is not None else []
            if live is None or (entries and entries[-1]["status"] == PENDING):
                break
            entry = {"status": PENDING, "to": to, "from": live.item.scope, "by": by}
            item = substrate.event_item(_with_history(live.item, [*entries, entry]), fresh=True)
            event = PromotionProposed(item=item, entry=entry)
            try:
                substrate.append(
                    [NewEvent(item_id, event, scope=live.item.scope, expected_version=live.version)], by=by
                )
            except ConcurrencyError:
                continue
            done.append(item_id)
            break
    return done


def _require_governance(governance: Any) -> Governance:
    if not isinstance(governance, Governance):
        raise InvalidArgument(f"governance must be a Governance, got {type(governance).__name__}")
    return governance


def approve(substrate: Substrate, item_id: str, *, by: str, governance: Governance, to: str | None = None) -> bool:
    """Publish a pending item into its proposed scope iff ``by`` may approve there; False when nothing is pending."""
    by, gov = acting_principal(by), _require_governance(governance)
    for _ in retries():
        state = _open(substrate, require_name(item_id, "item_id"))
        if state is None:
            return False
        live, pending_entry, entries = state
        target = pending_entry["to"]
        if to is not None and to != target:
            raise ApprovalRedirectError(by, to, "approve promotion", f"item {item_id!r} is proposed to {target!r}")
        if not gov.may_approve(by, target):
            raise GovernanceAuthorizationError(by, target, "approve promotion", f"item {item_id!r}")
        published, share = published_state(live, target, by, via="promotion")
        published = substrate.event_item(SubstrateItem(**published), fresh=True)
        entry = {
            "status": APPROVED,
            "to": target,
            "from": pending_entry["from"],
            "by": by,
            "proposer": pending_entry["by"],
            "decides": pending_entry["seq"],
        }
        final = substrate.event_item(_with_history(published, [*entries, entry]), fresh=True)
        events = [
            NewEvent(item_id, ItemPublished(item=published, entry=share), scope=target, expected_version=live.version),
            NewEvent(item_id, PromotionApproved(item=final, entry=entry), scope=target),
        ]
        try:
            substrate.append(events, by=by)
        except ConcurrencyError:
            continue
        return True
    raise ConcurrencyError(item_id, -1, "approve kept colliding with other writers; gave up")


def reject(substrate: Substrate, item_id: str, *, by: str, governance: Governance, reason: str = "") -> bool:
    """Refuse a pending promotion (by its proposer or an approver of the target); False when nothing is pending."""
    by, gov = acting_principal(by), _require_governance(governance)
    if not isinstance(reason, str):
        raise InvalidArgument(f"reason must be a string, got {type(reason).__name__}")
    for _ in retries():
        state = _open(substrate, require_name(item_id, "item_id"))
        if state is None:
            return False
        live, pending_entry, entries = state
        target, proposer = pending_entry["to"], pending_entry["by"]
        if by != proposer and not gov.may_approve(by, target):
            raise GovernanceAuthorizationError(by, target, "reject promotion", "only the proposer or an approver may")
        entry = {
            "status": REJECTED,
            "to": target,
            "from": pending_entry["from"],
            "by": by,
            "proposer": proposer,
            "reason": reason,
            "withdrawn": by == proposer,
            "decides": pending_entry["seq"],
        }
        item = substrate.event_item(_with_history(live.item, [*entries, entry]), fresh=True)
        event = NewEvent(
            item_id, PromotionRejected(item=item, entry=entry), scope=live.item.scope, expected_version=live.version
        )
        try:
            substrate.append([event], by=by)
        except ConcurrencyError:
            continue
        return True
    raise ConcurrencyError(item_id, -1, "reject kept colliding with other writers; gave up")


def pending(substrate: Substrate, *, to: str | None = None) -> list[SubstrateItem]:
    """Live items awaiting approval (optionally only those proposed to ``to``), in proposal order (one query)."""
    if to is not None:
        require_name(to, "to")
    with substrate.engine.connect() as c:
        return [SubstrateItem(**loads(doc)) for doc in records.pending_proposals(c, to, substrate.as_of_seq)]


@dataclass(frozen=True)
class AuthorizationDecision:
    """A completed promotion decision in the shared authorization shape (JSON-native via as_dict())."""

    capability_id: str
    version: str
    digest: str
    item_id: str
    scope: str
    decision: str  # "approved" | "rejected"
    authorized: bool
    decided_by: str
    proposed_by: str
    reason: str
    seq: int

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def authorization_decision(
    substrate: Substrate, item_id: str, *, capability_id: str, version: str, digest: str | None = None
) -> AuthorizationDecision:
    """Adapt an item's latest completed proposal to an AuthorizationDecision; pending or missing raise ValueError."""
    require_name(capability_id, "capability_id")
    require_name(version, "version")
    if digest is not None:
        require_name(digest, "digest")
    item_id = require_name(item_id, "item_id")
    with substrate.engine.connect() as c:
        row = records.latest_proposal(c, item_id, substrate.as_of_seq)
    if row is None:
        raise ValueError(f"item {item_id!r} has no proposal, so there is no decision")
    entry = loads(row[0])
    if entry["status"] == PENDING:
        raise ValueError(f"item {item_id!r} has a pending proposal and no decision yet")
    return AuthorizationDecision(
        capability_id=capability_id,
        version=version,
        digest=digest if digest is not None else row[2],
        item_id=item_id,
        scope=entry["to"],
        decision=entry["status"],
        authorized=entry["status"] == APPROVED,
        decided_by=entry["by"],
        proposed_by=entry.get("proposer", entry["by"]),
        reason=entry.get("reason", ""),
        seq=int(row[1]),
    )
