"""Merging the search index's segments: each catch-up adds one; merges keep their number logarithmic.

Segments are merged newest first, like a binary counter: while the second-newest holds no more entries than the
newest, the two become one (so sizes halve from the oldest to the newest, and an entry is rewritten O(log n)
times). A merge also moves the postings of docs no longer live into history rows, which live searches skip.
Merging changes where rows are, never what they say (``projections.search_index.DIGESTS``).
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import Connection

from projections.runner import hold_catch_up_lock
from projections.search_index import HEAD, HEADS, NAME, WORK_MEM

__all__ = ["MAX_SEGMENTS", "merge_segments"]

MAX_SEGMENTS = 24  # beyond this many, the newest are merged whatever their sizes

_SEGMENTS = text("SELECT seg, postings FROM search_segments ORDER BY seg")
_MERGE = text(
    "WITH gone AS (DELETE FROM search_lists WHERE seg = ANY(CAST(:segs AS bigint[])) "
    "  RETURNING term, scope, kind, hist, docs, imps), "
    "dead AS MATERIALIZED (SELECT doc FROM search_docs WHERE doc BETWEEN :lo AND :hi AND to_seq IS NOT NULL), "
    "e AS (SELECT g.term, g.scope, g.kind, g.hist OR u.doc IN (SELECT doc FROM dead) AS hist, u.doc, u.imp "
    "  FROM gone g, unnest(g.docs, g.imps) u(doc, imp)), "
    "lists AS (INSERT INTO search_lists (term, scope, kind, seg, hist, n, lo, docs, imps, head_docs, head_imps) "
    "  SELECT g.term, g.scope, g.kind, :seg, g.hist, g.n, g.docs[1], g.docs, g.imps, h.docs, h.imps "
    "  FROM (SELECT term, scope, kind, hist, count(*)::int AS n, array_agg(doc ORDER BY doc) AS docs, "
    "    array_agg(imp ORDER BY doc) AS imps FROM e GROUP BY term, scope, kind, hist) g " + HEADS + "), "
    "dgone AS (DELETE FROM search_deaths WHERE seg = ANY(CAST(:segs AS bigint[])) RETURNING term, scope, kind, tos), "
    "deaths AS (INSERT INTO search_deaths (term, scope, kind, seg, n, tos) "
    "  SELECT g.term, g.scope, g.kind, :seg, count(*), array_agg(t ORDER BY t) FROM dgone g, unnest(g.tos) t "
    "  GROUP BY 1, 2, 3), "
    "sgone AS (DELETE FROM search_segments WHERE seg = ANY(CAST(:segs AS bigint[])) RETURNING postings) "
    "INSERT INTO search_segments (seg, lo, hi, postings) SELECT :seg, :lo, :hi, sum(postings) FROM sgone"
)
_RANGE = text("SELECT min(lo), max(hi) FROM search_segments WHERE seg = ANY(CAST(:segs AS bigint[]))")


def _to_merge(sizes: list[tuple[int, int]], forced_only: bool = False) -> list[int]:
    """The newest segments to merge into one (none when the sizes already halve from oldest to newest, or, when
    ``forced_only``, while there are at most MAX_SEGMENTS)."""
    stack = [(size, [seg]) for seg, size in sizes]
    merged: list[int] = []
    while len(stack) >= 2 and ((stack[-2][0] <= stack[-1][0] and not forced_only) or len(stack) > MAX_SEGMENTS):
        (a, sa), (b, sb) = stack.pop(), stack.pop()
        stack.append((a + b, sb + sa))
        merged = stack[-1][1]
    return sorted(merged)


def merge_segments(conn: Connection, *, forced_only: bool = False) -> int:
    """Merge segments as the policy says, in ``conn``'s transaction; the number of segments merged away.
    ``forced_only``: only beyond MAX_SEGMENTS (an upkeep still catching up defers the rest)."""
    hold_catch_up_lock(conn, NAME)
    sizes = [(int(r[0]), int(r[1])) for r in conn.execute(_SEGMENTS)]
    segs = _to_merge(sizes, forced_only)
    if len(segs) < 2:
        return 0
    lo, hi = conn.execute(_RANGE, {"segs": segs}).one()
    seg = int(conn.execute(text("SELECT nextval('search_segment_ids')")).scalar_one())
    conn.execute(text("SELECT set_config('work_mem', :m, true)"), {"m": WORK_MEM})
    conn.execute(_MERGE, {"segs": segs, "seg": seg, "lo": lo or 0, "hi": hi or 0, "head": HEAD})
    return len(segs) - 1
