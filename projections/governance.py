"""The ``approvers`` (grant audit trail and live ACL) and ``proposals`` (append-only history) read models."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from projections.canonical import item_digest
from projections.jsonutil import dumps
from projections.projector import Projector

__all__ = ["APPROVER_EVENTS", "PROPOSAL_EVENTS", "apply"]

PROPOSAL_EVENTS = frozenset({"PromotionProposed", "PromotionApproved", "PromotionRejected"})
APPROVER_EVENTS = frozenset({"ApproverGranted", "ApproverRevoked"})

_APPROVER = text(
    "INSERT INTO approvers (seq, scope, who, by, bootstrap, revoked) VALUES (:seq, :scope, :who, :by, :bootstrap, "
    ":revoked)"
)
_PROPOSAL = text(
    "INSERT INTO proposals (item_id, seq, status, from_scope, to_scope, by, proposer, reason, item_digest, entry, "
    "recorded_at) VALUES (:item_id, :seq, :status, :from_scope, :to_scope, :by, :proposer, :reason, :item_digest, "
    "CAST(:entry AS jsonb), :recorded_at)"
)


def apply(conn: Connection, events: Sequence[Any]) -> None:
    """Append one audit row per approver grant or revocation and one proposal-history row per promotion event
    (never update): a scope's live approvers are those whose latest row is not a revocation."""
    approvers, proposals = [], []
    for e in events:
        d = e.data
        if e.type in APPROVER_EVENTS:
            revoked = e.type == "ApproverRevoked"
            approvers.append(
                {
                    "seq": e.seq,
                    "scope": d["scope"],
                    "who": d["who"],
                    "by": d["by"],
                    "bootstrap": not revoked and bool(d["bootstrap"]),
                    "revoked": revoked,
                }
            )
            continue
        entry = d["entry"]
        proposals.append(
            {
                "item_id": d["item"]["id"],
                "seq": e.seq,
                "status": entry["status"],
                "from_scope": entry.get("from"),
                "to_scope": entry["to"],
                "by": entry["by"],
                "proposer": entry.get("proposer", entry["by"]),
                "reason": entry.get("reason", ""),
                "item_digest": item_digest(d["item"]),
                "entry": dumps(entry),
                "recorded_at": e.recorded_at,
            }
        )
    if approvers:
        conn.execute(_APPROVER, approvers)
    if proposals:
        conn.execute(_PROPOSAL, proposals)


PROJECTOR = Projector(
    name="governance",
    handles=PROPOSAL_EVENTS | APPROVER_EVENTS,
    tables=("approvers", "proposals"),
    apply=apply,
    keys={"approvers": "seq", "proposals": "item_id, seq"},
)
