"""The ``item_history`` read model: every publish/merge entry of an item, with its revision digests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from projections.jsonutil import dumps
from projections.projector import Projector

__all__ = ["apply"]

_INSERT = text(
    "INSERT INTO item_history (item_id, seq, action, by, from_scope, to_scope, version, revision, entry, "
    "recorded_at) VALUES (:item_id, :seq, :action, :by, :from_scope, :to_scope, :version, :revision, "
    "CAST(:entry AS jsonb), :recorded_at)"
)


def _row(item_id: str, e: Any, entry: dict[str, Any]) -> dict[str, Any]:
    parents = entry.get("parents") or []
    return {
        "item_id": item_id,
        "seq": e.seq,
        "action": entry["action"],
        "by": entry["by"],
        "from_scope": entry.get("from"),
        "to_scope": entry.get("to"),
        "version": entry.get("version"),
        # A publish names one prior revision; a merge names its kept parent's here (all parents stay in entry).
        "revision": entry.get("revision") or (parents[0]["revision"] if parents else None),
        "entry": dumps(entry),
        "recorded_at": e.recorded_at,
    }


def apply(conn: Connection, events: Sequence[Any]) -> None:
    """One row per published item; two per merge (the kept item and the merged-away one)."""
    rows = []
    for e in events:
        entry = e.data["entry"]
        keep = e.data["item"]["id"]
        rows.append(_row(keep, e, entry))
        if e.type == "ItemsMerged":
            rows.append(_row(e.data["removed"], e, {**entry, "merged_into": keep}))
    if rows:
        conn.execute(_INSERT, rows)


PROJECTOR = Projector(
    name="history",
    handles=frozenset({"ItemPublished", "ItemsMerged"}),
    tables=("item_history",),
    apply=apply,
    keys={"item_history": "item_id, seq"},
)
