"""The ``revisions`` read model: every state any item has had, keyed by its content digest."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from projections.canonical import item_digest
from projections.items import ITEM_EVENTS
from projections.jsonutil import dumps
from projections.registry import Projector, register

__all__ = ["apply"]

_INSERT = text(
    "INSERT INTO revisions (digest, item_id, doc, seq) "
    "SELECT u.digest, u.item_id, u.doc::jsonb, u.seq FROM unnest(CAST(:digest AS text[]), "
    "CAST(:item_id AS text[]), CAST(:doc AS text[]), CAST(:seq AS bigint[])) AS u(digest, item_id, doc, seq) "
    "ON CONFLICT (digest) DO NOTHING"
)


def apply(conn: Connection, events: Sequence[Any]) -> None:
    """Record each carried item state once; the first event that produced a digest owns it."""
    rows: dict[str, tuple[str, str, int]] = {}
    for e in events:
        item = e.data.get("item")
        if item is not None:
            digest = item_digest(item)
            if digest not in rows:
                rows[digest] = (item["id"], dumps(item), e.seq)
    if rows:
        conn.execute(
            _INSERT,
            {
                "digest": list(rows),
                "item_id": [r[0] for r in rows.values()],
                "doc": [r[1] for r in rows.values()],
                "seq": [r[2] for r in rows.values()],
            },
        )


register(
    Projector(name="revisions", handles=ITEM_EVENTS, tables=("revisions",), apply=apply, keys={"revisions": "digest"})
)
