"""The ``items`` read model: the live state of every item, one row each."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.engine import Connection

from projections.canonical import event_item_digest as item_digest
from projections.jsonutil import dumps
from projections.registry import Projector, Statement, register, run_plan

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

# One statement per batch: the rows travel as one JSON document (serialized in C, unlike text arrays),
# then a set-wise upsert (pos is kept when an existing row is replaced).
_UPSERT = (
    "INSERT INTO items (id, kind, scope, text, doc, digest, version, pos, seq, created_at) "
    "SELECT u.doc->>'id', u.doc->>'kind', u.doc->>'scope', u.doc->>'text', u.doc, u.digest, u.version, u.pos, "
    "u.seq, (u.doc->>'created_at')::float8 "
    "FROM jsonb_to_recordset(CAST(:rows AS jsonb)) AS u(doc jsonb, digest text, version int, pos bigint, seq bigint) "
    "ON CONFLICT (id) DO UPDATE SET kind = EXCLUDED.kind, scope = EXCLUDED.scope, text = EXCLUDED.text, "
    "doc = EXCLUDED.doc, digest = EXCLUDED.digest, version = EXCLUDED.version, seq = EXCLUDED.seq, "
    "created_at = EXCLUDED.created_at"
)
_DELETE = "DELETE FROM items WHERE id = ANY(CAST(:ids AS text[]))"


def _removed(e: Any) -> str | None:
    if e.type == "ItemRemoved":
        return str(e.data["id"])
    if e.type == "ItemsMerged" and e.data.get("removed"):
        return str(e.data["removed"])
    return None


def apply(conn: Connection, events: Sequence[Any]) -> None:
    """Fold the batch to each id's final state, then one DELETE and one upsert (same result as event by event)."""
    run_plan(conn, plan(events))


def plan(events: Sequence[Any]) -> list[Statement]:
    """The statements of ``apply``: delete the ids removed in the batch, upsert every surviving final state."""
    final: dict[str, dict[str, Any] | None] = {}
    deleted: set[str] = set()
    first_seq: dict[str, int] = {}  # seq of the first put after the id's last delete in this batch
    for e in events:
        item = e.data.get("item")
        if item is not None:
            i = item["id"]
            if final.get(i, 0) is None or i not in first_seq:
                first_seq[i] = e.seq
            final[i] = {"doc": item, "digest": item_digest(item), "version": e.version, "seq": e.seq}
        gone = _removed(e)
        if gone is not None:
            final[gone] = None
            deleted.add(gone)
            first_seq.pop(gone, None)
    out: list[Statement] = []
    if deleted:
        out.append((_DELETE, {"ids": sorted(deleted)}))
    rows = [dict(r, pos=first_seq[i]) for i, r in final.items() if r is not None]
    if rows:
        out.append((_UPSERT, {"rows": dumps(rows)}))
    return out


register(
    Projector(
        name="items",
        handles=ITEM_EVENTS | {"ItemRemoved"},
        tables=("items",),
        apply=apply,
        keys={"items": "id"},
        plan=plan,
    )
)
