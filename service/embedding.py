"""Search (placeholder: lexical token overlap in SQL until the embeddings module lands)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from projections import loads
from service.items import SubstrateItem

if TYPE_CHECKING:
    from service.substrate import Substrate

__all__: list[str] = []

_TOKEN = re.compile(r"\w+")


def reindex(store: Substrate) -> None:
    """No model to fit in the lexical placeholder."""


def search(store: Substrate, query: str, k: int, *, kind: str | None, scope: str | None) -> list[tuple[Any, float]]:
    """Rank by the fraction of distinct query tokens found in each item's surface (in SQL)."""
    if not isinstance(query, str):
        raise TypeError(f"query must be a string, got {type(query).__name__}")
    tokens = sorted({t.lower() for t in _TOKEN.findall(query)})[:64]
    if k == 0 or not tokens:
        return []
    where, params = ["TRUE"], {"k": k, "n": float(len(tokens))}
    if kind is not None:
        where.append("kind = :kind")
        params["kind"] = kind
    if scope is not None:
        where.append("scope = :scope")
        params["scope"] = scope
    terms = []
    for i, tok in enumerate(tokens):
        params[f"t{i}"] = tok
        terms.append(f"(CASE WHEN strpos(surface, :t{i}) > 0 THEN 1 ELSE 0 END)")
    sql = text(
        f"SELECT doc::text, score FROM (SELECT doc, pos, ({' + '.join(terms)}) / :n AS score FROM "
        f"(SELECT doc, pos, lower(text || ' ' || (doc->'payload')::text || ' ' || (doc->'tags')::text) AS surface "
        f"FROM items WHERE {' AND '.join(where)}) s) r WHERE score > 0 ORDER BY score DESC, pos LIMIT :k"
    )
    with store.engine.connect() as c:
        rows = c.execute(sql, params).all()
    return [(SubstrateItem(**loads(doc)), float(score)) for doc, score in rows]
