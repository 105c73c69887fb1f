"""The ``items`` read model: the live state of every item, one row each."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from projections.jsonutil import dumps
from projections.registry import Projector, register
from projections.canonical import item_digest

__all__ = ["ITEM_EVENTS", "apply"]

# Every event whose data carries the resulting item state under "item".
ITEM_EVENTS = frozenset(
    {
        "ItemPut",
        "ItemUpdated",
        "ItemPublished",
        "ItemsMerged",
        "PromotionProposed",
        "PromotionApproved",
        "PromotionRejected",
        "EvidenceAssimilated",
        "EvidenceRetracted",
    }
)

_UPSERT = text(
    "INSERT INTO items (id, kind, scope, text, doc, digest, version, pos, seq, created_at) "
    "VALUES (:id, :kind, :scope, :text, CAST(:doc AS jsonb), :digest, :version, :seq, :seq, :created_at) "
    "ON CONFLICT (id) DO UPDATE SET kind = EXCLUDED.kind, scope = EXCLUDED.scope, text = EXCLUDED.text, "
    "doc = EXCLUDED.doc, digest = EXCLUDED.digest, version = EXCLUDED.version, seq = EXCLUDED.seq, "
    "created_at = EXCLUDED.created_at"
)
_DELETE = text("DELETE FROM items WHERE id = :id")


def _ops(events: Sequence[Any]) -> list[tuple[Any, dict[str, Any]]]:
    ops: list[tuple[Any, dict[str, Any]]] = []
    for e in events:
        item = e.data.get("item")
        if item is not None:
            ops.append(
                (
                    _UPSERT,
                    {
                        "id": item["id"],
                        "kind": item["kind"],
                        "scope": item["scope"],
                        "text": item["text"],
                        "doc": dumps(item),
                        "digest": item_digest(item),
                        "version": e.version,
                        "seq": e.seq,
                        "created_at": item["created_at"],
                    },
                )
            )
        removed = e.data.get("removed") if e.type == "ItemsMerged" else None
        if e.type == "ItemRemoved":
            removed = e.data["id"]
        if removed:
            ops.append((_DELETE, {"id": removed}))
    return ops


def apply(conn: Connection, events: Sequence[Any]) -> None:
    """Upsert the carried item state, delete removed items; consecutive statements of one kind are batched."""
    ops = _ops(events)
    i = 0
    while i < len(ops):
        stmt = ops[i][0]
        j = i
        while j < len(ops) and ops[j][0] is stmt:
            j += 1
        conn.execute(stmt, [p for _, p in ops[i:j]])
        i = j


register(
    Projector(
        name="items",
        handles=ITEM_EVENTS | {"ItemRemoved"},
        tables=("items",),
        apply=apply,
        keys={"items": "id"},
    )
)
