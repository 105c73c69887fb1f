"""The ``revisions`` read model: every state any item has had, keyed by its content digest."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from projections.items import ITEM_EVENTS
from projections.jsonutil import dumps
from projections.registry import Projector, register
from projections.canonical import item_digest

__all__ = ["apply"]

_INSERT = text(
    "INSERT INTO revisions (digest, item_id, doc, seq) VALUES (:digest, :item_id, CAST(:doc AS jsonb), :seq) "
    "ON CONFLICT (digest) DO NOTHING"
)


def apply(conn: Connection, events: Sequence[Any]) -> None:
    """Record each carried item state once; the first event that produced a digest owns it."""
    rows = []
    for e in events:
        item = e.data.get("item")
        if item is not None:
            rows.append({"digest": item_digest(item), "item_id": item["id"], "doc": dumps(item), "seq": e.seq})
    if rows:
        conn.execute(_INSERT, rows)


register(
    Projector(name="revisions", handles=ITEM_EVENTS, tables=("revisions",), apply=apply, keys={"revisions": "digest"})
)
