"""Item reads over the read models, live or as of a log position: the facade's reads delegate here.

Live reads use ``items``. A read as of position S reads the item states valid at S (``item_states``:
``from_seq <= S AND (to_seq IS NULL OR to_seq > S)``) in two parts: the live states among them are the ``items``
rows written at or before S (``items.seq`` is the live state's ``from_seq``), whose documents are at hand; the
closed ones (replaced or removed after S) come from ``item_states`` with their documents from ``revisions``. No
replay, no table of its own, nothing written, whatever S is.
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

# The item states (alias s) valid at :at, for the as-of reads of this module's callers.
VALID_AT = "s.from_seq <= :at AND (s.to_seq IS NULL OR s.to_seq > :at)"
# The closed states valid at :at: replaced or removed after it (the partial index on pos holds exactly the closed).
_CLOSED_AT = "s.to_seq IS NOT NULL AND s.to_seq > :at AND s.from_seq <= :at"
_GET = "SELECT doc::text FROM items WHERE id = :id"
# At most one of the two parts has a row: a closed state valid at :at was closed by :at's live state or later.
_GET_AT = (
    "SELECT doc::text FROM items WHERE id = :id AND seq <= :at UNION ALL "
    "SELECT r.doc::text FROM item_states s JOIN revisions r ON r.digest = s.digest "
    f"WHERE s.item_id = :id AND {_CLOSED_AT}"
)
_GET_MANY = "SELECT id, doc::text FROM items WHERE id = ANY(CAST(:ids AS text[]))"
_GET_MANY_AT = (
    "SELECT id, doc::text FROM items WHERE id = ANY(CAST(:ids AS text[])) AND seq <= :at UNION ALL "
    "SELECT s.item_id, r.doc::text FROM item_states s JOIN revisions r ON r.digest = s.digest "
    f"WHERE s.item_id = ANY(CAST(:ids AS text[])) AND {_CLOSED_AT}"
)
_ROW = "SELECT doc::text, version FROM items WHERE id = :id"
_COUNT = "SELECT count(*) FROM items"
_COUNT_AT = (
    f"SELECT (SELECT count(*) FROM items WHERE seq <= :at) + (SELECT count(*) FROM item_states s WHERE {_CLOSED_AT})"
)


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
        doc = c.execute(_sql(_GET_AT), {"id": item_id, "at": at}).scalar()
    return None if doc is None else _item(doc)


def has_item(c: Connection, item_id: str, at: int | None = None) -> bool:
    """Whether the item exists (as of ``at``)."""
    if at is None:
        return c.execute(_sql(_GET), {"id": item_id}).first() is not None
    return c.execute(_sql(_GET_AT), {"id": item_id, "at": at}).first() is not None


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
    at: int | None, kind: str | None, scope: str | None, scopes: Sequence[str] | None, after: int, limit: int | None
) -> tuple[str, dict[str, Any]]:
    """An items listing in insertion order, filtered in SQL (as of ``at``), after position ``after`` (``limit``
    rows at most): the SELECT of (doc, pos) and its parameters."""
    for name, value in (("kind", kind), ("scope", scope)):
        if value is not None and not isinstance(value, str):
            raise InvalidArgument(f"{name} must be a string or None, got {type(value).__name__}")
    params: dict[str, Any] = {"after": after, "at": at, "lim": limit}
    where = ["s.pos > :after"]
    if kind is not None:
        where.append("s.kind = :kind")
        params["kind"] = kind
    if scope is not None:
        where.append("s.scope = :scope")
        params["scope"] = scope
    if scopes is not None:
        where.append("s.scope = ANY(CAST(:scopes AS text[]))")
        params["scopes"] = list(scopes)
    tail = " ORDER BY s.pos" + ("" if limit is None else " LIMIT :lim")
    live = f"SELECT s.doc::text AS doc, s.pos FROM items s WHERE {' AND '.join(where)}"
    if at is None:
        return live + tail, params
    # Every state valid at :at has pos <= from_seq <= :at: the bound keeps later items out of the index ranges.
    where.append("s.pos <= :at")
    live = f"SELECT s.doc::text AS doc, s.pos FROM items s WHERE {' AND '.join(where)} AND s.seq <= :at"
    closed = (
        "SELECT r.doc::text AS doc, s.pos FROM item_states s JOIN revisions r ON r.digest = s.digest "
        f"WHERE {' AND '.join(where)} AND {_CLOSED_AT}"
    )
    return f"SELECT x.doc, x.pos FROM (({live}{tail}) UNION ALL ({closed}{tail})) x ORDER BY x.pos" + (
        "" if limit is None else " LIMIT :lim"
    ), params


def iter_items(
    engine: Engine,
    *,
    kind: str | None = None,
    scope: str | None = None,
    scopes: Sequence[str] | None = None,
    at: int | None = None,
) -> Iterator[SubstrateItem]:
    """Stream the items (as of ``at``) in insertion order, filters applied in SQL, on a connection of its own."""
    sql, params = _listing(at, kind, scope, scopes, 0, None)
    with engine.connect() as c:
        for doc, _ in c.execution_options(stream_results=True, yield_per=2000).execute(text(sql), params):
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
    sql, params = _listing(at, kind, None, scopes, after, limit + 1)
    rows = c.execute(_sql(sql), params).all()
    page = rows[:limit]
    nxt = int(page[-1][1]) if len(rows) > limit else None
    return [_item(doc) for doc, _ in page], nxt
