"""The ``items`` read model: the live state of every item, one row each."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.engine import Connection

from projections.canonical import event_item_digest as item_digest
from projections.jsonutil import dumps
from projections.projector import Projector, Statement, run_plan

__all__ = ["ITEM_EVENTS", "all_first_states", "apply"]

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
# The same upsert for a batch whose events are in the CTE ``ev`` (a batch append, or a replay's stretch of the log):
# only the seq of each id's final state, its digest and its pos travel (comma-separated: digests and seqs hold
# no comma).
_FROM_EV = (
    "INSERT INTO items (id, kind, scope, text, doc, digest, version, pos, seq, created_at) "
    "SELECT i->>'id', i->>'kind', i->>'scope', i->>'text', i, u.digest, ev.version, u.pos, ev.seq, "
    "(i->>'created_at')::float8 "
    "FROM unnest(string_to_array(:seqs, ',')::bigint[], string_to_array(:digests, ','), "
    "string_to_array(:pos, ',')::bigint[]) AS u(seq, digest, pos) "
    "JOIN ev ON ev.seq = u.seq, LATERAL (SELECT ev.data->'item' AS i) x"
)
_UPSERT_FROM_EV = _FROM_EV + (
    " ON CONFLICT (id) DO UPDATE SET kind = EXCLUDED.kind, scope = EXCLUDED.scope, text = EXCLUDED.text, "
    "doc = EXCLUDED.doc, digest = EXCLUDED.digest, version = EXCLUDED.version, seq = EXCLUDED.seq, "
    "created_at = EXCLUDED.created_at"
)


def all_first_states(events: Sequence[Any]) -> bool:
    """Whether every event is the first of its stream and carries that stream's own item: the items (and their
    states) are then new, so a plain INSERT will do (a quarter less work than an upsert: no speculative insertion).

    Every event carrying an item is appended to the item's own stream (service.*), so a stream's first event
    creates its item. Should a row exist anyway, the INSERT fails and nothing is lost: a batch append then takes
    the locked path (upserts), a replay starts again with upserts (``optimistic=False``).
    """
    for e in events:
        item = e.data.get("item")
        if e.version != 1 or item is None or item.get("id") != e.stream:
            return False
    return True


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


def batch_plan(events: Sequence[Any], *, optimistic: bool = True) -> list[Statement] | None:
    """``plan`` over the ``ev`` CTE, for batches that only put item states (None when one removes or merges);
    ``optimistic``: a plain INSERT when the batch only creates items (see ``all_first_states``)."""
    final: dict[str, Any] = {}
    first_seq: dict[str, int] = {}
    for e in events:
        item = e.data.get("item")
        if item is None or _removed(e) is not None:
            return None
        first_seq.setdefault(item["id"], e.seq)
        final[item["id"]] = e
    if not final:
        return []
    return [
        (
            _FROM_EV if optimistic and all_first_states(events) else _UPSERT_FROM_EV,
            {
                "seqs": ",".join(str(e.seq) for e in final.values()),
                "digests": ",".join(item_digest(e.data["item"]) for e in final.values()),
                "pos": ",".join(str(first_seq[i]) for i in final),
            },
        )
    ]


PROJECTOR = Projector(
    name="items",
    handles=ITEM_EVENTS | {"ItemRemoved"},
    tables=("items",),
    apply=apply,
    keys={"items": "id"},
    plan=plan,
    batch_plan=batch_plan,
    defer_indexes=True,
)
