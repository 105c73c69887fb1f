"""The ranking statements: the search index as of a position plus the tail after it, scored in one statement.

A live search reads the index as of the search checkpoint C and the items written since (the tail). A search as of
log position S reads the index as of E = min(S, C) -- every doc carries the interval it was live in, every
posting list the positions its docs were born at and every death list those they ended at, so counts and
frequencies at E are exact -- plus, when S is past C, the item states valid at S of the items written in (C, S].

Built only from the fixed fragments below (no caller input ever reaches the SQL text) and compiled once per
variant to the driver's placeholders. The OFFSET 0 fences keep every per-candidate lookup an index probe under the
generic plan every search uses (see ``service.search.embedders.state_statement``).
"""

from __future__ import annotations

import functools
import re

from sqlalchemy import text
from sqlalchemy.dialects.postgresql.psycopg import dialect as psycopg_dialect

__all__ = ["native", "past_sql", "ranking_sql"]

# The tail: items touched by the item events after the checkpoint. Their docs in the index are "killed" (the
# index may hold an older surface), their states are tokenized here; counts are corrected by both.
_TAIL = """
ck AS MATERIALIZED (
  SELECT c, {e} AS e FROM (SELECT coalesce((SELECT seq FROM checkpoints WHERE name = :lazy), 0) AS c) x
), qt AS MATERIALIZED (
  SELECT l.lexeme AS term, cardinality(l.positions) AS qtf FROM unnest(to_tsvector(CAST(:cfg AS regconfig), :q)) l
), tid AS MATERIALIZED (
  SELECT DISTINCT x.item_id FROM public.events e CROSS JOIN LATERAL (
    SELECT e.data->'item'->>'id' AS item_id UNION ALL SELECT e.data->>'removed' UNION ALL SELECT e.data->>'id') x
  WHERE e.seq > (SELECT c FROM ck) {tail_bound} AND e.type = ANY(CAST(:types AS text[])) AND x.item_id IS NOT NULL
), killed AS MATERIALIZED (
  SELECT d.doc, d.dl, d.terms FROM search_docs d
  WHERE d.to_seq IS NULL AND d.item_id IN (SELECT item_id FROM tid) {scope_d}
), tail AS MATERIALIZED ({tail}
), tdl AS MATERIALIZED (
  SELECT t.item_id, t.kind, (SELECT coalesce(sum(cardinality(l.positions)), 0) FROM unnest(t.tsv) l) AS dl
  FROM tail t
), tterm AS MATERIALIZED (
  SELECT t.item_id, l.lexeme AS term, cardinality(l.positions) AS tf FROM tail t, unnest(t.tsv) l
  WHERE l.lexeme IN (SELECT term FROM qt)
), st AS MATERIALIZED (
  SELECT greatest(s.n, :idf_docs)::float8 AS n, greatest(s.len::float8 / greatest(s.n, 1), 1.0) AS avgdl FROM (
    SELECT coalesce(dm.n_docs, 0) - (SELECT count(*) FROM killed) + (SELECT count(*) FROM tdl) AS n,
           coalesce(dm.total_len, 0) - (SELECT coalesce(sum(dl), 0) FROM killed)
           + (SELECT coalesce(sum(dl), 0) FROM tdl) AS len
    FROM (SELECT 1) one LEFT JOIN LATERAL ({domain}) dm ON true) s
), qdf AS MATERIALIZED (
  SELECT qt.term, qt.qtf, greatest(0,
      coalesce((SELECT sum({born}) FROM search_lists l WHERE l.term = qt.term {scope_l} {lo}), 0)
    - coalesce((SELECT sum({died}) FROM search_deaths x WHERE x.term = qt.term {scope_x}), 0)
    - (SELECT count(*) FROM killed k WHERE qt.term = ANY(k.terms))
    + (SELECT count(*) FROM tterm t WHERE t.term = qt.term))::float8 AS df FROM qt
), qw AS MATERIALIZED (
  SELECT f.term, f.qtf, f.df, ln(1 + (st.n - f.df + 0.5) / (f.df + 0.5)) AS idf FROM qdf f CROSS JOIN st
  ORDER BY f.df > 0 DESC, 4 DESC, f.term LIMIT :max_terms
)"""
_LIVE_TAIL = """
  SELECT i.id AS item_id, i.kind, to_tsvector(CAST(:cfg AS regconfig), search_surface(i.doc)) AS tsv
  FROM items i WHERE i.id IN (SELECT item_id FROM tid) {scope_i}"""
_PAST_TAIL = """
  SELECT s.item_id, s.kind, to_tsvector(CAST(:cfg AS regconfig), search_surface(r.doc)) AS tsv
  FROM item_states s JOIN revisions r ON r.digest = s.digest
  WHERE s.item_id IN (SELECT item_id FROM tid) AND s.from_seq <= :at AND (s.to_seq IS NULL OR s.to_seq > :at) {scope_s}"""
_LIVE_DOMAIN = "SELECT n_docs, total_len FROM search_domains WHERE domain = :domain"
_PAST_DOMAIN = (
    "SELECT n_docs, total_len FROM search_domain_log WHERE domain = :domain AND seq <= (SELECT e FROM ck) "
    "ORDER BY seq DESC LIMIT 1"
)

# The calibration's denominator: the query's own BM25, the query scored as a document of the domain.
_SCALE = """, z AS (
  SELECT sum(qw.idf * qw.qtf * (:k1 + 1) / (qw.qtf + :k1 * (1 - :b + :b * q.dl / st.avgdl))) AS z
  FROM qw CROSS JOIN st CROSS JOIN (SELECT coalesce(sum(qtf), 0) AS dl FROM qt) q
), qa AS MATERIALIZED (
  SELECT array_agg(term) AS terms, array_agg(idf) AS idfs FROM qw
)"""

# Lexical candidates: per query term, every posting when the term is rare, else the strongest of each segment;
# summed by doc; the best that were live at the index position (and not killed by the tail).
_LEXICAL = """, lexc AS MATERIALIZED (
  SELECT p.doc, sum(qw.idf * p.imp) AS s FROM qw CROSS JOIN LATERAL (
    SELECT u.doc, u.imp FROM search_lists l CROSS JOIN LATERAL unnest(
      CASE WHEN qw.df <= :rare_df OR l.head_docs IS NULL OR :per_term > :head THEN l.docs
           ELSE l.head_docs[1:(:per_term)] END,
      CASE WHEN qw.df <= :rare_df OR l.head_docs IS NULL OR :per_term > :head THEN l.imps
           ELSE l.head_imps[1:(:per_term)] END) u(doc, imp)
    WHERE l.term = qw.term {rows} {scope_l} AND (CAST(:kind AS text) IS NULL OR l.kind = :kind)) p
  WHERE qw.df > 0 {born_by}
  GROUP BY p.doc ORDER BY 2 DESC, 1 LIMIT :n_over
), lexl AS (
  SELECT c.doc FROM lexc c
  CROSS JOIN LATERAL (SELECT sd.doc, sd.to_seq FROM search_docs sd WHERE sd.doc = c.doc OFFSET 0) d
  WHERE {valid} AND c.doc NOT IN (SELECT doc FROM killed)
  ORDER BY c.s DESC, c.doc LIMIT :n_lex
)"""
_LIVE_VALID = "d.to_seq IS NULL"
_PAST_VALID = "d.doc <= (SELECT e FROM ck) AND (d.to_seq IS NULL OR d.to_seq > (SELECT e FROM ck))"
_CAND_LEX = ", cand AS (SELECT doc FROM lexl)"
_DENSE = """, qv AS (
  SELECT sum(e.vec) AS v FROM qw JOIN embedder_terms e ON e.domain_id = :did AND e.term = qw.term
), denc AS (
  SELECT v.item_seq AS doc FROM item_vectors v
  WHERE v.domain_id = :did AND (CAST(:kind AS text) IS NULL OR v.kind = :kind) AND (SELECT v FROM qv) IS NOT NULL
  ORDER BY (v.embedding <=> (SELECT v FROM qv)){exact} LIMIT {dense_limit}
), cand AS (
  SELECT doc FROM lexl UNION SELECT doc FROM denc
)"""
# A doc's vector counts only when it embeds that doc (an item's later surface is another doc).
_DENSE_JOIN = """
  LEFT JOIN LATERAL (
    SELECT 1 - (v.embedding <=> (SELECT v FROM qv)) AS cos FROM item_vectors v
    WHERE v.domain_id = :did AND v.item_id = d.item_id AND v.item_seq = d.doc OFFSET 0) e ON true"""
_LEX = "least(1.0, coalesce(l.s / z.z, 0))"
_SCORE_DENSE = (
    f"CASE WHEN e.cos IS NULL THEN {_LEX} "
    f"ELSE (1 - :w) * {_LEX} + :w * greatest(0.0, (e.cos - :min_cos) / (1 - :min_cos)) END"
)
# Every candidate scored exactly: indexed docs from their term counts, tail items from their tsvectors.
_SCORED = """, scored AS (
  SELECT d.item_id, {score} AS score
  FROM cand c CROSS JOIN z CROSS JOIN st CROSS JOIN qa
  CROSS JOIN LATERAL (SELECT sd.* FROM search_docs sd WHERE sd.doc = c.doc OFFSET 0) d
  CROSS JOIN LATERAL (
    SELECT sum(qa.idfs[array_position(qa.terms, u.term)] * u.tf * (:k1 + 1)
               / (u.tf + :k1 * (1 - :b + :b * d.dl / st.avgdl))) AS s
    FROM unnest(d.terms, d.tfs) u(term, tf) WHERE u.term = ANY(qa.terms)) l {dense_join}
  WHERE {valid} AND d.doc NOT IN (SELECT doc FROM killed) AND (CAST(:kind AS text) IS NULL OR d.kind = :kind) {scope_d}
  UNION ALL
  SELECT t.item_id, least(1.0, coalesce(sum(qa.idfs[array_position(qa.terms, tt.term)] * tt.tf * (:k1 + 1)
               / (tt.tf + :k1 * (1 - :b + :b * t.dl / st.avgdl))) / min(z.z), 0))
  FROM tdl t JOIN tterm tt ON tt.item_id = t.item_id CROSS JOIN z CROSS JOIN st CROSS JOIN qa
  WHERE tt.term = ANY(qa.terms) AND (CAST(:kind AS text) IS NULL OR t.kind = :kind)
  GROUP BY t.item_id
){top}"""
# The k best with their documents, equal scores in the order of the item's last write (insertion order for items
# never rewritten): live from items, as of :at from the item's state then.
_LIVE_TOP = """, top AS (
  SELECT s.item_id, s.score, i.seq, i.doc FROM scored s
  CROSS JOIN LATERAL (SELECT it.seq, it.doc FROM items it WHERE it.id = s.item_id OFFSET 0) i
  WHERE s.score > 0 ORDER BY s.score DESC, i.seq, s.item_id LIMIT :k
)
SELECT top.doc::text, top.score FROM top ORDER BY top.score DESC, top.seq, top.item_id
"""
_PAST_TOP = """, top AS (
  SELECT s.item_id, s.score, i.from_seq AS seq, i.digest FROM scored s CROSS JOIN LATERAL (
    SELECT x.from_seq, x.digest FROM item_states x WHERE x.item_id = s.item_id AND x.from_seq <= :at
    ORDER BY x.from_seq DESC LIMIT 1) i
  WHERE s.score > 0 ORDER BY s.score DESC, i.from_seq, s.item_id LIMIT :k
)
SELECT r.doc::text, top.score FROM top JOIN revisions r ON r.digest = top.digest
ORDER BY top.score DESC, top.seq, top.item_id
"""


def _compiled(sql: str) -> str:
    return str(text(sql).compile(dialect=psycopg_dialect()))


def _scopes(scoped: bool) -> dict[str, str]:
    names = {"d": "d", "i": "i", "l": "l", "x": "x", "s": "s"}
    return {f"scope_{k}": f"AND {a}.scope = :scope" if scoped else "" for k, a in names.items()}


def _live(scoped: bool, dense: bool, exact: bool, dense_limit: int | None) -> str:
    scope = _scopes(scoped)
    sql = "WITH " + _TAIL.format(
        e="c",
        tail_bound="",
        tail=_LIVE_TAIL.format(**scope),
        domain=_LIVE_DOMAIN,
        born="l.n",
        died="x.n",
        lo="",
        **scope,
    )
    sql += _SCALE + _LEXICAL.format(rows="AND NOT l.hist", born_by="", valid=_LIVE_VALID, **scope)
    limit = ":n_dense" if dense_limit is None else str(int(dense_limit))
    sql += _DENSE.format(exact=" + 0" if exact else "", dense_limit=limit) if dense else _CAND_LEX
    sql += _SCORED.format(
        score=_SCORE_DENSE if dense else _LEX,
        dense_join=_DENSE_JOIN if dense else "",
        top=_LIVE_TOP,
        valid=_LIVE_VALID,
        **scope,
    )
    return _compiled(sql)


def _past(scoped: bool) -> str:
    scope = _scopes(scoped)
    sql = "WITH " + _TAIL.format(
        e="least(c, CAST(:at AS bigint))",
        tail_bound="AND e.seq <= :at",
        tail=_PAST_TAIL.format(**scope),
        domain=_PAST_DOMAIN,
        born="width_bucket((SELECT e FROM ck), l.docs)",
        died="width_bucket((SELECT e FROM ck), x.tos)",
        lo="AND l.lo <= (SELECT e FROM ck)",
        **scope,
    )
    sql += _SCALE + _LEXICAL.format(
        rows="AND l.lo <= (SELECT e FROM ck)", born_by="AND p.doc <= (SELECT e FROM ck)", valid=_PAST_VALID, **scope
    )
    sql += _CAND_LEX + _SCORED.format(score=_LEX, dense_join="", top=_PAST_TOP, valid=_PAST_VALID, **scope)
    return _compiled(sql)


_PAST_SQL = {s: _past(s) for s in (False, True)}


@functools.lru_cache(maxsize=64)
def ranking_sql(*, scoped: bool, dense: bool, exact: bool, dense_limit: int | None = None) -> str:
    """The live ranking statement of one variant, in the driver's placeholders.

    ``dense_limit``: the number of nearest vectors written into the statement rather than bound. Under a generic
    plan a bound LIMIT counts as a tenth of the domain's vectors, and for a few thousand of them the planner then
    sorts every vector by its exact distance (3.3 ms at 5,183 vectors) instead of reading 25 from the HNSW index
    (1.1 ms); with the number written in, it plans for the few it reads.
    """
    return _live(scoped, dense, exact, dense_limit)


def past_sql(*, scoped: bool) -> str:
    """The ranking statement as of log position ``:at`` (lexical), in the driver's placeholders."""
    return _PAST_SQL[scoped]


_NAMED = re.compile(r"%\((\w+)\)s")


@functools.lru_cache(maxsize=64)
def native(sql: str) -> tuple[str, tuple[str, ...]]:
    """``sql`` (in the driver's ``%(name)s`` placeholders) in PostgreSQL's own ``$n``, and the parameter names in
    ``$n`` order: for psycopg's RawCursor. psycopg parses a statement longer than 4 kB for its placeholders at every
    execution (it caches only shorter ones): these are 5-6 kB, and the parse took ~1.7 ms of each search."""
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        if match.group(1) not in names:
            names.append(match.group(1))
        return f"${names.index(match.group(1)) + 1}"

    converted = _NAMED.sub(number, sql)
    if "%s" in converted or re.search(r"%[^%]", converted.replace("%%", "")):
        raise ValueError("a ranking statement holds a placeholder other than %(name)s")
    return converted.replace("%%", "%"), tuple(names)
