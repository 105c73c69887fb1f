"""The search read models, folded set-wise from a stretch of the log: docs, posting lists, deaths, domain counts.

A *doc* is a run of consecutive states of one item with the same search surface (scope, kind, whether it has
text, and the text + payload + tags that ``search_surface`` serializes): a metadata-only change continues it, a
changed surface or a removal ends it. Its id is the seq of the run's first state (an event produces at most one
item state), and it keeps the interval ``[doc, to_seq)`` in which it was live, so searches as of any position
read the same rows as live ones. Every doc ever made stays (history); live searches skip the dead ones.

The projector is lazy (off the write path): ``advance(conn, after, target)`` indexes the events in
``(after, target]`` in one statement, reading them from the log, and is what a catch-up from nothing runs too, so
a rebuild and any sequence of catch-ups make the same rows. Postings of one call form one *segment*
(``projections.search_segments`` merges segments); which segment holds a posting is physical layout, so the
digests of those tables are taken over their unnested contents (``DIGESTS``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from projections.items import ITEM_EVENTS
from projections.projector import Projector

__all__ = [
    "ALL_DOMAIN",
    "BM25_B",
    "BM25_K1",
    "DIGESTS",
    "HEAD",
    "HEADS",
    "IMP_LEN",
    "NAME",
    "SEARCH",
    "TS_CONFIG",
    "WORK_MEM",
    "advance",
    "apply",
]

NAME = "search"
# The all-scopes domain (scope=None). Not "*": that is a legal scope name, and must stay its own domain.
ALL_DOMAIN = ""
TS_CONFIG = "english"
BM25_K1 = 1.2
BM25_B = 0.5
# Reference length for a posting's impact ``imp`` (BM25's saturation of its tf at this document length): the
# order in which a common term's postings are read, a proxy that needs no corpus statistic.
IMP_LEN = 128.0
HEAD = 128  # a list row keeps its strongest HEAD postings apart when it has more
_TYPES = sorted(ITEM_EVENTS | {"ItemRemoved"})
# A list row's strongest HEAD postings, for the rows that have more (the rows ``g`` of docs and imps arrays): a
# top-N sort of the common terms' rows only, after the one sort by (term, ..., doc) that builds every row.
HEADS = (
    "LEFT JOIN LATERAL (SELECT array_agg(u.d ORDER BY u.i DESC, u.d) AS docs, array_agg(u.i ORDER BY u.i DESC, u.d) "
    "  AS imps FROM (SELECT d, i FROM unnest(g.docs, g.imps) v(d, i) WHERE g.n > :head ORDER BY i DESC, d "
    "  LIMIT :head) u HAVING count(*) > 0) h ON true"
)

# Every item effect in the stretch (a state, or a removal; ord orders two effects of one event), each state with
# its search identity; the live doc of every item touched; boundaries (an effect whose identity differs from the
# one before it) start docs and end them. ``born``: the new docs, tokenized once; ``closed``: the live docs the
# stretch ended. Then their postings (one segment), the deaths, the domains' counts after each event, and the
# domains' totals and dirty marks (a domain's text changed: a state with text, or replacing one with text).
# The postings' sort (a million rows for 20,000 passages) is keyed by (term, g, doc), with g a small number for
# each (scope, kind, hist) of the stretch and the fixed-width columns first: keyed by the three text and boolean
# columns themselves, each tie on the term compared them one by one, and the sort took a quarter of the statement.
_ADVANCE = text(
    "WITH eff AS MATERIALIZED ("
    "  SELECT e.seq, x.ord, x.item_id, x.item FROM public.events e CROSS JOIN LATERAL ("
    "    SELECT 0 AS ord, e.data->'item'->>'id' AS item_id, e.data->'item' AS item "
    "    WHERE jsonb_typeof(e.data->'item') = 'object' "
    "    UNION ALL SELECT 1, e.data->>'removed', NULL "
    "    WHERE e.type = 'ItemsMerged' AND coalesce(e.data->>'removed', '') <> '' "
    "    UNION ALL SELECT 2, e.data->>'id', NULL WHERE e.type = 'ItemRemoved') x "
    "  WHERE e.seq > :after AND e.seq <= :target AND e.type = ANY(CAST(:types AS text[]))), "
    "st AS (SELECT seq, ord, item_id, item->>'scope' AS scope, item->>'kind' AS kind, "
    "  coalesce(item->>'text', '') <> '' AS has_text, search_surface(item) AS surface FROM eff), "
    "sh AS (SELECT st.*, CASE WHEN scope IS NOT NULL THEN md5(concat_ws(chr(31), scope, kind, has_text::text, "
    "  surface))::uuid END AS thash FROM st), "
    "prev AS MATERIALIZED (SELECT d.doc, d.item_id, d.scope, d.kind, d.has_text, d.thash FROM search_docs d "
    "  WHERE d.to_seq IS NULL AND d.item_id IN (SELECT item_id FROM eff)), "
    "seqd AS MATERIALIZED (SELECT u.*, lag(u.thash) OVER w AS pth, lag(u.scope) OVER w AS pscope, "
    "  coalesce(lag(u.has_text) OVER w, false) AS ptext FROM ("
    "    SELECT doc AS seq, -1 AS ord, item_id, scope, kind, has_text, NULL::text AS surface, thash, true AS old "
    "    FROM prev UNION ALL "
    "    SELECT seq, ord, item_id, scope, kind, coalesce(has_text, false), surface, thash, false FROM sh) u "
    "  WINDOW w AS (PARTITION BY u.item_id ORDER BY u.seq, u.ord)), "
    "bnd AS MATERIALIZED (SELECT s.*, lead(s.seq) OVER (PARTITION BY s.item_id ORDER BY s.seq, s.ord) AS next_seq "
    "  FROM seqd s WHERE s.thash IS DISTINCT FROM s.pth), "
    "born AS MATERIALIZED (SELECT b.seq AS doc, b.item_id, b.scope, b.kind, b.has_text, b.thash, "
    "  b.next_seq AS to_seq, v.terms, v.tfs, v.dl FROM bnd b CROSS JOIN LATERAL ("
    "    SELECT coalesce(array_agg(l.lexeme), '{}') AS terms, "
    "    coalesce(array_agg(cardinality(l.positions)::smallint), '{}') AS tfs, "
    "    coalesce(sum(cardinality(l.positions)), 0)::int AS dl "
    "    FROM unnest(to_tsvector(CAST(:cfg AS regconfig), b.surface)) l) v "
    "  WHERE NOT b.old AND b.thash IS NOT NULL), "
    "ins AS (INSERT INTO search_docs (doc, item_id, scope, kind, has_text, dl, thash, to_seq, terms, tfs) "
    "  SELECT doc, item_id, scope, kind, has_text, dl, thash, to_seq, terms, tfs FROM born), "
    "closed AS (UPDATE search_docs d SET to_seq = b.next_seq FROM bnd b "
    "  WHERE b.old AND b.next_seq IS NOT NULL AND d.doc = b.seq "
    "  RETURNING d.doc, d.scope, d.kind, d.has_text, d.dl, d.to_seq, d.terms), "
    "dead AS (SELECT scope, kind, has_text, dl, to_seq, terms FROM closed "
    "  UNION ALL SELECT scope, kind, has_text, dl, to_seq, terms FROM born WHERE to_seq IS NOT NULL), "
    "seg AS MATERIALIZED (SELECT nextval('search_segment_ids') AS id), "
    "grp AS MATERIALIZED (SELECT row_number() OVER () AS g, x.* FROM ("
    "  SELECT DISTINCT scope, kind, to_seq IS NOT NULL AS hist FROM born) x), "
    "post AS (SELECT r.g, b.doc, (u.tf / (u.tf + :k1 * (1 - :b + :b * b.dl / :ref)))::real AS imp, u.term "
    "  FROM born b JOIN grp r ON r.scope = b.scope AND r.kind = b.kind AND r.hist = (b.to_seq IS NOT NULL), "
    "  unnest(b.terms, b.tfs) u(term, tf)), "
    "lists AS (INSERT INTO search_lists (term, scope, kind, seg, hist, n, lo, docs, imps, head_docs, head_imps) "
    "  SELECT g.term, r.scope, r.kind, (SELECT id FROM seg), r.hist, g.n, g.docs[1], g.docs, g.imps, h.docs, h.imps "
    "  FROM (SELECT term, g, count(*)::int AS n, array_agg(doc ORDER BY doc) AS docs, "
    "    array_agg(imp ORDER BY doc) AS imps FROM post GROUP BY term, g) g JOIN grp r USING (g) " + HEADS + "), "
    "deaths AS (INSERT INTO search_deaths (term, scope, kind, seg, n, tos) "
    "  SELECT u.term, d.scope, d.kind, (SELECT id FROM seg), count(*), array_agg(d.to_seq ORDER BY d.to_seq) "
    "  FROM dead d, unnest(d.terms) u(term) GROUP BY 1, 2, 3), "
    "segs AS (INSERT INTO search_segments (seg, lo, hi, postings) "
    "  SELECT (SELECT id FROM seg), min(x.lo), max(x.hi), sum(x.n) FROM ("
    "    SELECT min(doc) AS lo, max(doc) AS hi, sum(cardinality(terms)) AS n FROM born "
    "    UNION ALL SELECT NULL, NULL, sum(cardinality(terms)) FROM dead) x HAVING sum(x.n) > 0), "
    "chg AS MATERIALIZED (SELECT x.domain, c.seq, c.dn, c.dlen, c.dtext FROM ("
    "    SELECT scope, doc AS seq, 1 AS dn, dl::bigint AS dlen, has_text::int AS dtext FROM born "
    "    UNION ALL SELECT scope, to_seq, -1, -dl::bigint, -has_text::int FROM dead) c, "
    "  LATERAL (VALUES (c.scope), ('')) x(domain)), "
    "per AS (SELECT domain, seq, sum(dn) AS dn, sum(dlen) AS dlen FROM chg GROUP BY 1, 2), "
    "base AS (SELECT domain, n_docs, total_len FROM search_domains WHERE domain IN (SELECT domain FROM per)), "
    "dlog AS (INSERT INTO search_domain_log (domain, seq, n_docs, total_len) "
    "  SELECT p.domain, p.seq, coalesce(b.n_docs, 0) + sum(p.dn) OVER w, coalesce(b.total_len, 0) + sum(p.dlen) OVER w "
    "  FROM per p LEFT JOIN base b USING (domain) WINDOW w AS (PARTITION BY p.domain ORDER BY p.seq)), "
    "tot AS (SELECT domain, sum(dn) AS dn, sum(dlen) AS dlen, sum(dtext) AS dtext FROM chg GROUP BY 1), "
    "marks AS (SELECT d AS domain, max(seq) AS changed_seq FROM ("
    "    SELECT pscope AS d, seq FROM seqd WHERE NOT old AND ptext "
    "    UNION ALL SELECT scope, seq FROM seqd WHERE NOT old AND has_text "
    "    UNION ALL SELECT '', seq FROM seqd WHERE NOT old AND (ptext OR has_text)) t GROUP BY 1) "
    "INSERT INTO search_domains (domain, n_docs, total_len, n_text, changed_seq) "
    "SELECT domain, coalesce(tot.dn, 0), coalesce(tot.dlen, 0), coalesce(tot.dtext, 0), coalesce(marks.changed_seq, 0) "
    "FROM tot FULL JOIN marks USING (domain) "
    "ON CONFLICT (domain) DO UPDATE SET n_docs = search_domains.n_docs + EXCLUDED.n_docs, "
    "total_len = search_domains.total_len + EXCLUDED.total_len, n_text = search_domains.n_text + EXCLUDED.n_text, "
    "changed_seq = greatest(search_domains.changed_seq, EXCLUDED.changed_seq)"
)
_PARAMS = {"types": _TYPES, "cfg": TS_CONFIG, "k1": BM25_K1, "b": BM25_B, "ref": IMP_LEN, "head": HEAD}


# Keeps the sort of a stretch's postings in memory (20,000 passages: ~1M postings, a 78 MB sort; 32MB spilled it).
WORK_MEM = "256MB"


def advance(conn: Connection, after: int, target: int) -> None:
    """Index the item events in ``(after, target]`` (the read models must describe exactly ``after``)."""
    if target > after:
        conn.execute(text("SELECT set_config('work_mem', :m, true)"), {"m": WORK_MEM})
        conn.execute(_ADVANCE, {**_PARAMS, "after": int(after), "target": int(target)})


def apply(conn: Connection, events: Sequence[Any]) -> None:
    """``advance`` over the stretch of the log these events (in seq order, all its item events) come from."""
    if events:
        advance(conn, events[0].seq - 1, events[-1].seq)


# Canonical contents of the tables whose rows depend on how the log was cut into batches (segments, and which
# postings are history): what a digest compares.
DIGESTS = {
    "search_lists": "SELECT l.term, l.scope, l.kind, u.doc, u.imp FROM search_lists l, unnest(l.docs, l.imps) "
    "u(doc, imp) ORDER BY 1, 2, 3, 4",
    "search_deaths": "SELECT d.term, d.scope, d.kind, t FROM search_deaths d, unnest(d.tos) t ORDER BY 1, 2, 3, 4",
    "search_segments": "SELECT sum(postings) FROM search_segments",
}

SEARCH = Projector(
    name=NAME,
    handles=ITEM_EVENTS | {"ItemRemoved"},
    tables=("search_docs", "search_lists", "search_deaths", "search_segments", "search_domain_log", "search_domains"),
    apply=apply,
    keys={
        "search_docs": "doc",
        "search_lists": "term, scope, kind, seg, hist",
        "search_deaths": "term, scope, kind, seg",
        "search_segments": "seg",
        "search_domain_log": "domain, seq",
        "search_domains": "domain",
    },
    lazy=True,
    advance=advance,
    digests=DIGESTS,
)
