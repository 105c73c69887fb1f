"""Item reads over the read models, live or as of a log position: the facade's reads delegate here.

Live reads use ``items``. A read as of position S is a query over ``item_states`` (the states valid at S:
``from_seq <= S AND (to_seq IS NULL OR to_seq > S)``) joined with ``revisions`` for the documents: no replay,
no table of its own, nothing written, whatever S is.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from projections import loads
from service.domain.items import SubstrateItem
from service.domain.validation import InvalidArgument, require_count

__all__ = ["VALID_AT", "count_items", "get_item", "get_items", "has_item", "item_row", "iter_items", "page_items"]

# The states valid at :at (alias s), for every as-of read of this module and its callers'.
VALID_AT = "s.from_seq <= :at AND (s.to_seq IS NULL OR s.to_seq > :at)"
# An item's state as of :at: the latest state produced at or before :at, unless it was replaced or removed by then
# (the primary key's descending scan from :at finds it in one probe).
_STATE_AT = (
    "SELECT r.doc::text FROM (SELECT s.digest, s.to_seq FROM item_states s WHERE s.item_id = :id AND s.from_seq <= :at "
    "ORDER BY s.from_seq DESC LIMIT 1) s JOIN revisions r ON r.digest = s.digest WHERE s.to_seq IS NULL OR s.to_seq > :at"
)
_GET = "SELECT doc::text FROM items WHERE id = :id"
_GET_MANY = "SELECT id, doc::text FROM items WHERE id = ANY(CAST(:ids AS text[]))"
_GET_MANY_AT = (
    "SELECT s.item_id, r.doc::text FROM item_states s JOIN revisions r ON r.digest = s.digest "
    f"WHERE s.item_id = ANY(CAST(:ids AS text[])) AND {VALID_AT}"
)
_ROW = "SELECT doc::text, version FROM items WHERE id = :id"
_COUNT = "SELECT count(*) FROM items"
_COUNT_AT = f"SELECT count(*) FROM item_states s WHERE {VALID_AT}"


@functools.lru_cache(maxsize=64)
def _sql(sql: str) -> Any:
    return text(sql)


def _item(doc: str | bytes) -> SubstrateItem:
    return SubstrateItem(**loads(doc))


def item_row(c: Connection, item_id: str) -> tuple[SubstrateItem, int] | None:
    """The live item and its stream version (what a write must check), or None."""
    row = c.execute(_sql(_ROW), {"id": item_id}).first()
    return None if row is None else (_item(row[0]), int(row[1]))


def get_item(c: Connection, item_id: str, at: int | None = None) -> SubstrateItem | None:
    """The item (as of log position ``at`` when given), or None."""
    if at is None:
        doc = c.execute(_sql(_GET), {"id": item_id}).scalar()
    else:
        doc = c.execute(_sql(_STATE_AT), {"id": item_id, "at": at}).scalar()
    return None if doc is None else _item(doc)


def has_item(c: Connection, item_id: str, at: int | None = None) -> bool:
    """Whether the item exists (as of ``at``)."""
    if at is None:
        return c.execute(_sql(_GET), {"id": item_id}).first() is not None
    return c.execute(_sql(_STATE_AT), {"id": item_id, "at": at}).first() is not None


def get_items(c: Connection, ids: Sequence[str], at: int | None = None) -> dict[str, SubstrateItem]:
    """The items among ``ids`` that exist (as of ``at``), keyed by id: one query."""
    if at is None:
        rows = c.execute(_sql(_GET_MANY), {"ids": list(ids)}).all()
    else:
        rows = c.execute(_sql(_GET_MANY_AT), {"ids": list(ids), "at": at}).all()
    return {r[0]: _item(r[1]) for r in rows}


def count_items(c: Connection, at: int | None = None) -> int:
    """How many items exist (as of ``at``)."""
    if at is None:
        return int(c.execute(_sql(_COUNT)).scalar_one())
    return int(c.execute(_sql(_COUNT_AT), {"at": at}).scalar_one())


def _listing(
    at: int | None, kind: str | None, scope: str | None, scopes: Sequence[str] | None
) -> tuple[str, list[str], dict[str, Any]]:
    """The FROM clause, WHERE terms and parameters of an items listing filtered in SQL (as of ``at``)."""
    for name, value in (("kind", kind), ("scope", scope)):
        if value is not None and not isinstance(value, str):
            raise InvalidArgument(f"{name} must be a string or None, got {type(value).__name__}")
    params: dict[str, Any] = {}
    if at is None:
        source, where = "items s", ["TRUE"]
        doc = "s.doc"
    else:
        # Every state valid at :at has pos <= from_seq <= :at: the bound keeps later items out of the index range.
        source = "item_states s JOIN revisions r ON r.digest = s.digest"
        where, doc = [VALID_AT, "s.pos <= :at"], "r.doc"
        params["at"] = at
    if kind is not None:
        where.append("s.kind = :kind")
        params["kind"] = kind
    if scope is not None:
        where.append("s.scope = :scope")
        params["scope"] = scope
    if scopes is not None:
        where.append("s.scope = ANY(CAST(:scopes AS text[]))")
        params["scopes"] = list(scopes)
    return f"SELECT {doc}::text, s.pos FROM {source}", where, params


def iter_items(
    engine: Engine,
    *,
    kind: str | None = None,
    scope: str | None = None,
    scopes: Sequence[str] | None = None,
    at: int | None = None,
) -> Iterator[SubstrateItem]:
    """Stream the items (as of ``at``) in insertion order, filters applied in SQL, on a connection of its own."""
    select, where, params = _listing(at, kind, scope, scopes)
    sql = text(f"{select} WHERE {' AND '.join(where)} ORDER BY s.pos")
    with engine.connect() as c:
        for doc, _ in c.execution_options(stream_results=True, yield_per=2000).execute(sql, params):
            yield _item(doc)


def page_items(
    c: Connection,
    *,
    kind: str | None = None,
    scopes: Sequence[str] | None = None,
    after: int = 0,
    limit: int = 100,
    at: int | None = None,
) -> tuple[list[SubstrateItem], int | None]:
    """One page of items (as of ``at``) in insertion order after position ``after`` (keyset): (items, next or None)."""
    require_count(after, "after")
    if require_count(limit, "limit") == 0:
        return [], None
    select, where, params = _listing(at, kind, None, scopes)
    where.append("s.pos > :after")
    params.update(after=after, lim=limit + 1)
    rows = c.execute(_sql(f"{select} WHERE {' AND '.join(where)} ORDER BY s.pos LIMIT :lim"), params).all()
    page = rows[:limit]
    nxt = int(page[-1][1]) if len(rows) > limit else None
    return [_item(doc) for doc, _ in page], nxt
