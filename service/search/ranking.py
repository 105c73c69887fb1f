"""Search over one visibility domain: BM25 on stemmed postings fused with a per-domain learned embedding, in SQL.

A domain is one scope, or every scope (``ALL_DOMAIN``, shown as ``*``) when ``scope=None``. Everything a ranking
reads -- document frequencies, lengths, the embedder, the vectors -- belongs to that domain alone (MXR-080-0237).

Scores are in [0, 1]: ``lex`` is BM25 over the item's surface (text, serialized payload, tags) divided by the
query's BM25 ceiling (every query term, saturated), its idf counting the domain as at least IDF_MIN_DOCS items; ``cos`` is the cosine in the domain's embedding, clipped at
0 (and below MIN_COS). A text item that has a vector scores ``DENSE_WEIGHT * cos + (1 - DENSE_WEIGHT) * lex``;
every other item (structured items, and text items of a domain too small to fit an embedder) scores ``lex``.
Candidates are the union of the lexical top LEX_CANDIDATES and the nearest-neighbour top CANDIDATES (HNSW, or an
exact scan in small domains). The lexical top is ranked by the sum, over the postings read, of the term's idf times
the posting's stored saturation ``imp`` (tf saturated at a fixed reference length); a rare term's postings are read
whole, a common term's PER_TERM strongest only, so a very common term costs a bounded scan. Every candidate is then
rescored exactly as above and ranked by ``ORDER BY score DESC LIMIT k``, equal scores oldest first (the seq of
the item's last write: insertion order for items never rewritten, as the spec's stable sort keeps it). When fewer
than k items score above zero, the rest of the k are the other items of the filtered set at score 0.0, in
insertion order (the spec's search ranks every candidate; an exact zero means no overlap at all, which callers
such as retrieve_action exclude as evidence).

Queries are tokenized like the items (PostgreSQL ``english``: stemmed, stopwords dropped). A non-text query (a
number, a dict of fields, a list) is serialized as payloads are and ranked by ``lex`` alone, the spec's lexical
fallback for it; None matches nothing. An unknown kind filters out every item (as ``all(kind=...)`` does). An
empty or whitespace-only query, or one with no word token at all (only punctuation or stopwords), matches nothing:
every item scores 0.0. NUL characters are treated as spaces. A scope no item can have (NUL, lone
surrogate) is an empty domain.
"""

from __future__ import annotations

import json
import weakref
from typing import TYPE_CHECKING, Any

import psycopg
from sqlalchemy import text
from sqlalchemy.dialects.postgresql.psycopg import dialect as psycopg_dialect

from projections import loads
from projections.embeddings import ALL_DOMAIN, BM25_B, BM25_K1, TS_CONFIG
from projections.runner import catch_up_engine
from service.domain.items import MODALITIES, SubstrateItem
from service.domain.validation import InvalidArgument
from service.search.embedders import VERSION, EmbedderState, embedder_state, refit, state_from_row, state_statement

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

__all__: list[str] = []

DENSE_WEIGHT = 0.1  # tuned on SciFact train claims (bench/retrieval_quality.py); lexical evidence dominates
# Candidate lists (each at least k) and posting depths: on bench/search.py (100k items) these give recall@10 0.91
# against the exhaustive ranking, where the former 20 + 20 candidates over deeper reads (PER_TERM 128, RARE_DF 2000)
# gave 0.90 for about twice the work; each candidate costs three index probes to rescore.
LEX_CANDIDATES = 30
CANDIDATES = 25
PER_TERM = 32  # strongest postings read per common query term
RARE_DF = 1000  # a query term in at most this many items is read whole: rare terms are the discriminative ones
MAX_TERMS = 64  # highest-idf distinct query terms used (long queries, e.g. a whole item's text)
EXACT_MAX = 2000  # domains with at most this many vectors are searched exactly (~1 ms), larger ones through HNSW
# hnsw.ef_search: recall@10 vs exact on 100k LSA vectors (two index builds): 0.94-0.95 at 64-80, 0.96 at 96,
# 0.965-0.97 at 128 (bench/search.py)
HNSW_EF = 128
MAX_QUERY_CHARS = 100_000
MAX_K = 2**31 - 1  # "up to k": no domain holds more, and the statement's LIMITs stay in range
# Longer queries skip the pipelined round trip: psycopg's pipeline mode was seen to hang on statements of 1-2 MB
# over the unix socket, so only small ones are pipelined (a query this long is no latency-bound lookup anyway).
PIPELINE_MAX_QUERY = 8192
MIN_COS = 0.05  # cosines below this are noise in a small learned space: they add nothing to a score
# idf counts a domain as at least this many documents. In a handful of items a matched term occurs in most of them
# and an unmatched one in none, so plain BM25 idf makes any partial match look like no match: "refunds policy"
# against the one item "refunds within 30 days" scored 0.08, under the 0.15 an investigation needs. Domains this
# large or larger rank exactly as plain BM25.
IDF_MIN_DOCS = 100

_LEXICAL = """
WITH st AS (
  SELECT greatest(n_docs, :idf_docs)::float8 AS n, greatest(total_len::float8 / greatest(n_docs, 1), 1.0) AS avgdl
  FROM search_domains WHERE domain = :domain
), qw AS MATERIALIZED (
  SELECT q.term, coalesce(f.df, 0) AS df,
         ln(1 + (st.n - coalesce(f.df, 0) + 0.5) / (coalesce(f.df, 0) + 0.5)) AS idf
  FROM (SELECT DISTINCT l.lexeme AS term FROM unnest(to_tsvector(CAST(:cfg AS regconfig), :q)) l) q
  CROSS JOIN st LEFT JOIN term_df f ON f.domain = :domain AND f.term = q.term
  ORDER BY coalesce(f.df, 0) > 0 DESC, 3 DESC, q.term LIMIT :max_terms
), z AS (
  SELECT sum(idf) * (:k1 + 1) AS z FROM qw
), qa AS MATERIALIZED (
  SELECT array_agg(term) AS terms, array_agg(idf) AS idfs FROM qw
), lexc AS (
  SELECT p.item_id FROM qw CROSS JOIN {scopes} CROSS JOIN LATERAL (
    SELECT t.item_id, t.imp FROM item_terms t
    WHERE t.scope = sc.scope AND t.term = qw.term AND (CAST(:kind AS text) IS NULL OR t.kind = :kind)
    ORDER BY t.imp DESC LIMIT CASE WHEN qw.df <= :rare_df THEN qw.df ELSE :per_term END) p
  WHERE qw.df > 0
  GROUP BY p.item_id
  ORDER BY sum(qw.idf * p.imp) DESC, p.item_id
  LIMIT :n_lex
){dense_ctes}, scored AS (
  SELECT c.item_id, {score} AS score, i.seq
  FROM cand c CROSS JOIN z CROSS JOIN st CROSS JOIN qa
  CROSS JOIN LATERAL (SELECT sd.seq, sd.kind, sd.scope FROM search_docs sd WHERE sd.item_id = c.item_id OFFSET 0) i
  CROSS JOIN LATERAL (
    SELECT sum(qa.idfs[array_position(qa.terms, t.term)] * t.tf * (:k1 + 1)
               / (t.tf + :k1 * (1 - :b + :b * t.dl / st.avgdl))) AS s
    FROM item_terms t WHERE t.item_id = c.item_id AND t.term = ANY(qa.terms)
  ) l {dense_join}
  WHERE (CAST(:kind AS text) IS NULL OR i.kind = :kind) {scope_i}
), top AS (
  SELECT item_id, score, seq FROM scored WHERE score > 0 ORDER BY score DESC, seq, item_id LIMIT :k
)
SELECT it.doc::text, top.score FROM top
CROSS JOIN LATERAL (SELECT doc FROM items WHERE id = top.item_id OFFSET 0) it
ORDER BY top.score DESC, top.seq, top.item_id
"""
# The all-scopes domain reads each scope's postings (one index serves both; see migration 0002).
_ALL_SCOPES = "(SELECT domain AS scope FROM search_domains WHERE domain <> '' AND n_docs > 0) sc"
_CAND_LEX = ", cand AS (SELECT item_id FROM lexc)"
_DENSE = """, qv AS (
  SELECT sum(e.vec) AS v FROM qw JOIN embedder_terms e ON e.domain_id = :did AND e.term = qw.term
), denc AS (
  SELECT v.item_id, v.item_seq, 1 - (v.embedding <=> (SELECT v FROM qv)) AS cos FROM item_vectors v
  WHERE v.domain_id = :did AND (CAST(:kind AS text) IS NULL OR v.kind = :kind) AND (SELECT v FROM qv) IS NOT NULL
  ORDER BY (v.embedding <=> (SELECT v FROM qv)){exact} LIMIT :n_dense
), cand AS (
  SELECT item_id, item_seq, cos FROM denc
  UNION ALL SELECT item_id, NULL, NULL FROM lexc WHERE item_id NOT IN (SELECT item_id FROM denc)
)"""
# A vector embedded at an older version of the item never counts (the item changed since: its old text). A nearest
# neighbour brings its own; a lexical candidate's is looked up.
_DENSE_JOIN = """
  LEFT JOIN LATERAL (
    SELECT 1 - (v.embedding <=> (SELECT v FROM qv)) AS cos FROM item_vectors v
    WHERE c.item_seq IS NULL AND v.domain_id = :did AND v.item_id = c.item_id AND v.item_seq = i.seq OFFSET 0) d
  ON true CROSS JOIN LATERAL (SELECT CASE WHEN c.item_seq = i.seq THEN c.cos ELSE d.cos END AS cos) e"""
_SCORE_DENSE = (
    "CASE WHEN e.cos IS NULL THEN coalesce(l.s / z.z, 0) "
    "ELSE :w * CASE WHEN e.cos >= :min_cos THEN e.cos ELSE 0 END + (1 - :w) * coalesce(l.s / z.z, 0) END"
)
_SCORE_LEX = "coalesce(l.s / z.z, 0)"


def _sql(scoped: bool, dense: bool, exact: bool) -> str:
    # Built only from the fixed fragments above: no caller input ever reaches the SQL text. Compiled once to the
    # driver's placeholders.
    return _compiled(
        _LEXICAL.format(
            scopes="(SELECT CAST(:scope AS text) AS scope) sc" if scoped else _ALL_SCOPES,
            scope_i="AND i.scope = :scope" if scoped else "",
            dense_ctes=_DENSE.format(exact=" + 0" if exact else "") if dense else _CAND_LEX,
            dense_join=_DENSE_JOIN if dense else "",
            score=_SCORE_DENSE if dense else _SCORE_LEX,
        )
    )


def _compiled(sql: str) -> str:
    return str(text(sql).compile(dialect=psycopg_dialect()))


# The OFFSET 0 fences keep every per-candidate lookup an index probe under the generic plan every search uses (see
# vectors._STATE_FOR_SEARCH), where the planner cannot see how few candidates there are.
_SQL = {(s, d, e): _sql(s, d, e) for s in (False, True) for d in (False, True) for e in (False, True)}


def _check(query: Any, kind: Any, scope: Any) -> str:
    if kind is not None and not isinstance(kind, str):
        raise InvalidArgument(f"kind must be None or a string, got {type(kind).__name__}")
    if scope is not None and (not isinstance(scope, str) or not scope.strip()):
        raise InvalidArgument(f"scope must be None or a non-empty string, got {scope!r}")
    query = _query_text(query)
    # PostgreSQL text holds neither NUL nor lone surrogates: a query gets spaces / U+FFFD for them.
    return query[:MAX_QUERY_CHARS].replace("\x00", " ").encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _query_text(query: Any) -> str:
    """A query's text: a string as it is; a non-text query (a number, a dict of fields, a list) as the words it
    holds, serialized as payloads are (None holds none)."""
    if isinstance(query, str):
        return query
    if query is None:
        return ""
    if isinstance(query, (bytes, bytearray)):
        return bytes(query).decode("utf-8", "replace")
    if isinstance(query, (dict, list, tuple)):
        return json.dumps(query, default=str, ensure_ascii=False)
    return str(query)


def _storable(scope: str | None) -> bool:
    """Whether an item could have this scope at all (a scope with NUL or a lone surrogate never reaches the log)."""
    return scope is None or (
        "\x00" not in scope and scope.encode("utf-8", "surrogatepass").decode("utf-8", "replace") == scope
    )


def reindex(engine: Engine) -> list[str]:
    """Refit every domain whose embedder is missing or older than the domain's text; the refitted domains."""
    catch_up_engine(engine)
    domains = stale_domains(engine)
    for domain in domains:
        refit(engine, domain)
    return [_label(d) for d in domains]


def stale_domains(engine: Engine) -> list[str]:
    """The domains whose embedder is missing or older than the domain's text (as of the caught-up postings)."""
    with engine.connect() as c:
        return [
            r[0]
            for r in c.execute(
                text(
                    "SELECT d.domain FROM search_domains d LEFT JOIN embedders e USING (domain) "
                    "WHERE e.domain IS NULL OR e.fitted_seq <> d.changed_seq OR e.version <> :v ORDER BY d.domain"
                ),
                {"v": VERSION},
            )
        ]


def _label(domain: str) -> str:
    return "*" if domain == ALL_DOMAIN else domain


def embedder_status(engine: Engine) -> list[dict[str, Any]]:
    """One row per domain: its size and its embedder (mode, dimensions, vectors, whether it is stale)."""
    catch_up_engine(engine)
    with engine.connect() as c:
        rows = c.execute(
            text(
                "SELECT d.domain, d.n_docs, d.n_text, d.changed_seq, e.dim, "
                "(SELECT count(*) FROM item_vectors v WHERE v.domain_id = e.domain_id), e.vocab, e.fitted_seq, "
                "e.fitted_at, e.params->>'mode' FROM search_domains d LEFT JOIN embedders e USING (domain) "
                "ORDER BY d.domain"
            )
        ).all()
    return [
        {
            "domain": _label(r[0]),
            "items": int(r[1]),
            "text_items": int(r[2]),
            "mode": r[9] or "unfitted",
            "dim": int(r[4] or 0),
            "vectors": int(r[5] or 0),
            "vocabulary": int(r[6] or 0),
            "fitted_seq": r[7],
            "stale": r[7] is None or r[7] != r[3],
            "fitted_at": r[8].isoformat() if r[8] is not None else None,
        }
        for r in rows
    ]


def search(engine: Engine, query: Any, k: int, *, kind: str | None, scope: str | None) -> list[tuple[Any, float]]:
    """The k best (item copy, score) pairs of ``scope``'s domain for ``query``, best first (see module doc)."""
    q = _check(query, kind, scope)
    if k == 0 or not _storable(scope) or (kind is not None and kind not in MODALITIES):
        return []  # an unknown kind filters out everything, as all(kind=...) does
    k = min(k, MAX_K)
    # A non-text query ranks by lexical overlap alone: a learned text embedding has nothing to say about it.
    weight = DENSE_WEIGHT if isinstance(query, str) else 0.0
    hits = _ranked(engine, q, k, kind=kind, scope=scope, dense_weight=weight) if q.strip() else []
    if len(hits) < k:
        hits += _unmatched(engine, k - len(hits), kind, scope, [it.id for it, _ in hits])
    return hits


# The next n items of the filtered set in insertion order, other than the ranked ones: one index range per kind
# ((scope, kind, pos) or (kind, pos)), merged, so no query sorts a whole scope.
_UNMATCHED = text(
    "SELECT x.doc::text FROM unnest(CAST(:kinds AS text[])) AS m(kind), LATERAL ("
    " SELECT i.pos, i.doc FROM items i WHERE i.kind = m.kind AND (CAST(:scope AS text) IS NULL OR i.scope = :scope)"
    " AND i.id <> ALL(CAST(:ranked AS text[])) ORDER BY i.pos LIMIT :n) x ORDER BY x.pos LIMIT :n"
)


def _unmatched(
    engine: Engine, n: int, kind: str | None, scope: str | None, ranked: list[str]
) -> list[tuple[Any, float]]:
    """Items that match nothing of the query (score 0.0) to fill a search up to k, oldest first."""
    kinds = list(MODALITIES) if kind is None else [kind]
    with engine.connect() as c:
        rows = c.execute(_UNMATCHED, {"kinds": kinds, "scope": scope, "ranked": ranked, "n": n}).all()
    return [(SubstrateItem(**loads(r[0])), 0.0) for r in rows]


def _ranked(
    engine: Engine, q: str, k: int, *, kind: str | None, scope: str | None, dense_weight: float = DENSE_WEIGHT
) -> list[tuple[Any, float]]:
    """The items scoring above zero, best first, at most k."""
    domain = ALL_DOMAIN if scope is None else scope
    n_dense = max(k, CANDIDATES)
    params = {
        "q": q,
        "k": k,
        "n_lex": max(k, LEX_CANDIDATES),
        "n_dense": n_dense,
        "kind": kind,
        "scope": scope,
        "domain": domain,
        "cfg": TS_CONFIG,
        "k1": BM25_K1,
        "b": BM25_B,
        "w": dense_weight,
        "min_cos": MIN_COS,
        "idf_docs": IDF_MIN_DOCS,
        "per_term": max(PER_TERM, k),
        "max_terms": MAX_TERMS,
        "rare_df": RARE_DF,
    }
    ef = min(max(n_dense, HNSW_EF), 1000)  # pgvector's ef_search range; iterative scans go further when filters need it
    if len(q) <= PIPELINE_MAX_QUERY:
        try:
            return _pipelined_search(engine, domain, ef, params)
        except psycopg.Error:
            pass  # the plain path below reports it (or recovers) the way every SQLAlchemy statement does
    for _ in range(3):
        with engine.begin() as c:
            state = embedder_state(c, domain, ef_search=ef)
            if state.fresh:
                return _rank(c, state, params)
        refit(engine, domain)
    return _rank_as_fitted(engine, domain, ef, params)


def _pipelined_search(engine: Engine, domain: str, ef: int, params: dict[str, Any]) -> list[tuple[Any, float]]:
    """search() with one round trip per attempt (see _pipelined); refits a stale domain up to 3 times."""
    refits = 0
    for _ in range(6):
        state, hits = _pipelined(engine, domain, ef, params)
        if hits is not None:
            return hits
        if not state.fresh:
            if refits == 3:
                break
            refit(engine, domain)
            refits += 1
        # else: fresh, but the domain asked for another statement variant than the one sent; it is known now
    return _rank_as_fitted(engine, domain, ef, params)


def _rank_as_fitted(engine: Engine, domain: str, ef: int, params: dict[str, Any]) -> list[tuple[Any, float]]:
    """A writer keeps dirtying the domain: rank with what is fitted."""
    with engine.begin() as c:
        return _rank(c, embedder_state(c, domain, ef_search=ef), params)


# Per engine and domain, the (domain_id, dense, exact) the last state of the domain asked for: the variant of the
# ranking statement to send along with the state (a wrong guess only costs sending it again).
_VARIANTS: weakref.WeakKeyDictionary[Any, dict[str, tuple[int | None, bool, bool]]] = weakref.WeakKeyDictionary()
_MAX_VARIANTS = 4096


def _variant(state: EmbedderState) -> tuple[int | None, bool, bool]:
    return state.domain_id, state.dim > 0 and state.domain_id is not None, state.n_vectors <= EXACT_MAX


def _pipelined(engine: Engine, domain: str, ef: int, params: dict[str, Any]) -> tuple[EmbedderState, Any]:
    """BEGIN, the domain state (and settings), the ranking statement, COMMIT, in one round trip: (state, hits).

    hits is None when the state is not fresh or asks for another variant than the one sent (nothing to use).
    """
    known = _VARIANTS.setdefault(engine, {})
    guess = known.get(domain)
    state_sql, state_params = state_statement(domain, ef)
    raw = engine.raw_connection()
    try:
        dc: Any = raw.driver_connection
        # Prepared at once (psycopg would wait for a 5th execution, and forgets them all at any rollback on the
        # connection), and committed, not rolled back, for the same reason.
        with dc.pipeline():
            got_state = dc.execute(state_sql, state_params, prepare=True)
            ranked = None
            if guess is not None:
                ranked = dc.execute(
                    _SQL[(params["scope"] is not None, guess[1], guess[2])], {**params, "did": guess[0]}, prepare=True
                )
            dc.commit()
        state = state_from_row(domain, got_state.fetchone())
        rows = ranked.fetchall() if ranked is not None else []
    except psycopg.OperationalError:
        raw.invalidate()
        raise
    finally:
        raw.close()
    variant = _variant(state)
    if known.get(domain) != variant:
        if len(known) >= _MAX_VARIANTS:
            known.clear()
        known[domain] = variant
    if not state.fresh or guess != variant:
        return state, None
    return state, _hits(rows)


def _rank(c: Any, state: EmbedderState, params: dict[str, Any]) -> list[tuple[Any, float]]:
    dense, exact = _variant(state)[1:]
    sql = _SQL[(params["scope"] is not None, dense, exact)]
    return _hits(c.exec_driver_sql(sql, {**params, "did": state.domain_id}).all())


def _hits(rows: Any) -> list[tuple[Any, float]]:
    return [(SubstrateItem(**loads(doc)), float(score)) for doc, score in rows]
