"""The embedding caches and the inline ``vectors`` projector that keeps them from serving an item's old text.

Fitted embedders (``embedders``, ``embedder_terms``) and their vectors (``item_vectors``) are derived from the search
read models by the upkeep (``service.search.embedders``), never replayed from the log. A vector carries the doc it
embeds (``item_seq``: see ``projections.search_index``); this inline projector deletes an item's vectors in the
same transaction as any later event that changes or removes the item, so no search ever reads a vector of text
the item no longer has.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.engine import Connection

from projections.items import ITEM_EVENTS
from projections.projector import Projector, Statement, run_plan

__all__ = ["VECTORS", "drop_stale_vectors", "plan_stale_vectors"]

# Vectors carry the doc (the seq of the item's first state with that surface) they were embedded at. Only strictly
# older rows go: a replay (rebuild, or verify's shadow schema, where this table resolves to the live one)
# re-applies events no newer than the live rows, so it never deletes a current vector, while a later event always
# supersedes what was there.
_DROP_VECTORS_SQL = (
    "DELETE FROM item_vectors v USING unnest(CAST(:ids AS text[]), CAST(:seqs AS bigint[])) AS x(item_id, seq) "
    "WHERE v.item_id = x.item_id AND v.item_seq < x.seq"
)


def _touched(e: Any) -> list[str]:
    out: list[str] = []
    item = e.data.get("item")
    if item is not None:
        out.append(item["id"])
    if e.type == "ItemsMerged" and e.data.get("removed"):
        out.append(e.data["removed"])
    if e.type == "ItemRemoved":
        out.append(e.data["id"])
    return out


def drop_stale_vectors(conn: Connection, events: Sequence[Any]) -> None:
    """Delete the vectors of every item these events change or remove (embedded at an older seq)."""
    run_plan(conn, plan_stale_vectors(events))


def plan_stale_vectors(events: Sequence[Any]) -> list[Statement]:
    """The statement of ``drop_stale_vectors`` (none when every event creates its item)."""
    latest: dict[str, int] = {}
    for e in events:
        for item_id in _touched(e):
            # A stream's first event creates its item: there is no vector yet (keeps bulk puts cheap).
            if not (e.version == 1 and item_id == e.stream):
                latest[item_id] = e.seq
    return [(_DROP_VECTORS_SQL, {"ids": list(latest), "seqs": list(latest.values())})] if latest else []


# Inline: a changed or removed item's vector is gone in the same transaction as the event (owns no table of its
# own; item_vectors is a cache table).
VECTORS = Projector(
    name="vectors",
    handles=ITEM_EVENTS | {"ItemRemoved"},
    tables=(),
    apply=drop_stale_vectors,
    keys={},
    plan=plan_stale_vectors,
)
