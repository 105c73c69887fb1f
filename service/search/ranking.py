"""Search over one visibility domain: BM25 on the search read models fused with the domain's learned embedding.

A domain is one scope, or every scope (``ALL_DOMAIN``, shown as ``*``) when ``scope=None``. Everything a ranking
reads -- document frequencies, lengths, the embedder, the vectors -- belongs to that domain alone (MXR-080-0237).

A search writes nothing and takes no lock a writer waits on: it reads the index as of the search checkpoint plus
the items written since (the tail, tokenized in the same statement), so it sees every committed write without
projecting anything. Keeping the index current and fitting embedders is the upkeep's job
(``service.search.upkeep``); a search uses whatever embedder was fitted last, and ranks the items it has no
current vector for lexically.

Scores are calibrated to [0, 1] on one scale for every domain (docs/search.md):
- ``lex = min(1, BM25(q, d) / BM25(q, q))``: the item's BM25 over its surface (text, serialized payload, tags)
  divided by the query's own BM25 scored as a document of the same domain (its term counts and length), so an
  item whose surface equals the query scores 1 and one sharing no term with it 0; idf counts the domain as at
  least IDF_MIN_DOCS items, and only the MAX_TERMS highest-idf distinct query terms count (in both);
- ``c = max(0, (cos - MIN_COS) / (1 - MIN_COS))`` with ``cos`` the cosine in the domain's embedding;
- a text item with a vector of its current text scores ``(1 - DENSE_WEIGHT) * lex + DENSE_WEIGHT * c``, every
  other item ``lex``.
Candidates are the union of the lexical top LEX_CANDIDATES and the nearest-neighbour top CANDIDATES (HNSW, or an
exact scan in small domains), plus every tail item sharing a term with the query. The lexical top is ranked by the
sum, over the postings read, of the term's idf times the posting's stored saturation ``imp``; a rare term's
postings are read whole, a common term's PER_TERM strongest of each segment only. Every candidate is then scored
exactly as above and ranked by ``ORDER BY score DESC LIMIT k``, equal scores oldest first (the seq of the item's
last write: insertion order for items never rewritten, as the spec's stable sort keeps it). When fewer than k
items score above zero, the rest of the k are the other items of the filtered set at score 0.0, in insertion
order (the spec's search ranks every candidate; an exact zero means no overlap at all, which callers such as
retrieve_action exclude as evidence).

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

from projections import loads
from projections.items import ITEM_EVENTS
from projections.search_index import ALL_DOMAIN, BM25_B, BM25_K1, HEAD, NAME, TS_CONFIG
from service.domain.items import MODALITIES, SubstrateItem
from service.domain.validation import InvalidArgument
from service.search.embedders import EmbedderState, embedder_state, state_from_row, state_statement
from service.search.statements import native, past_sql, ranking_sql

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

__all__: list[str] = []

# Tuned on the first half of the SciFact training claims (bench/retrieval_quality.py): lexical evidence dominates.
DENSE_WEIGHT = 0.1
# Candidate lists (each at least k) and posting depths: on bench/search.py (100k items) these give recall@10 0.91
# against the exhaustive ranking; each candidate costs a probe of its doc row to rescore.
LEX_CANDIDATES = 30
CANDIDATES = 25
PER_TERM = 32  # strongest postings read per common query term and segment (beyond HEAD: the whole lists)
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
# Cosines below this add nothing: in the SciFact abstracts' embedding 99% of a claim's cosines with random abstracts
# fall below 0.3 (95% below 0.18), while the median with a cited abstract is 0.52. So an item that shares no word
# with the query and is not close to it in meaning scores exactly 0.
MIN_COS = 0.3
# idf counts a domain as at least this many documents. In a handful of items a matched term occurs in most of them
# and an unmatched one in none, so plain BM25 idf makes any partial match look like no match. Domains this large
# or larger rank exactly as plain BM25.
IDF_MIN_DOCS = 100
LIVE_SLACK = 2  # lexical candidates read per one kept: room for postings of docs that ended since their segment
PAST_SLACK = 4  # the same as of a past position, where more of the postings read belong to docs not live then
_ITEM_TYPES = sorted(ITEM_EVENTS | {"ItemRemoved"})


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


def _label(domain: str) -> str:
    return "*" if domain == ALL_DOMAIN else domain


def embedder_status(engine: Engine) -> list[dict[str, Any]]:
    """One row per domain, as of the search checkpoint: its size and its embedder (mode, dimensions, vectors,
    whether it is stale)."""
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


def search(
    engine: Engine, query: Any, k: int, *, kind: str | None, scope: str | None, at: int | None = None
) -> list[tuple[Any, float]]:
    """The k best (item copy, score) pairs of ``scope``'s domain for ``query``, best first (see module doc); as of log
    position ``at`` when given (lexical: no embedder is kept for past positions; see docs/search.md)."""
    q = _check(query, kind, scope)
    if k == 0 or not _storable(scope) or (kind is not None and kind not in MODALITIES):
        return []  # an unknown kind filters out everything, as all(kind=...) does
    k = min(k, MAX_K)
    # A non-text query ranks by lexical overlap alone: a learned text embedding has nothing to say about it.
    weight = DENSE_WEIGHT if isinstance(query, str) else 0.0
    hits: list[tuple[Any, float]] = []
    if q.strip():
        hits = _ranked(engine, q, k, kind=kind, scope=scope, dense_weight=weight, at=at)
    if len(hits) < k:
        hits += _unmatched(engine, k - len(hits), kind, scope, [it.id for it, _ in hits], at)
    return hits


# The next n items of the filtered set in insertion order, other than the ranked ones: one index range per kind
# ((scope, kind, pos) or (kind, pos)), merged, so no query sorts a whole scope. As of :at, the states valid then.
_UNMATCHED = text(
    "SELECT x.doc::text FROM unnest(CAST(:kinds AS text[])) AS m(kind), LATERAL ("
    " SELECT i.pos, i.doc FROM items i WHERE i.kind = m.kind AND (CAST(:scope AS text) IS NULL OR i.scope = :scope)"
    " AND i.id <> ALL(CAST(:ranked AS text[])) ORDER BY i.pos LIMIT :n) x ORDER BY x.pos LIMIT :n"
)
# As of :at, the states valid then: the live ones are the items rows written by then (items.seq is the live state's
# from_seq), the closed ones come from item_states (its order index holds only those; service.store.reads).
_UNMATCHED_AT = text(
    "SELECT x.doc::text FROM unnest(CAST(:kinds AS text[])) AS m(kind), LATERAL ("
    " (SELECT i.pos, i.doc FROM items i WHERE i.kind = m.kind AND (CAST(:scope AS text) IS NULL OR i.scope = :scope)"
    " AND i.seq <= :at AND i.id <> ALL(CAST(:ranked AS text[])) ORDER BY i.pos LIMIT :n) UNION ALL"
    " (SELECT s.pos, r.doc FROM item_states s JOIN revisions r ON r.digest = s.digest"
    " WHERE s.kind = m.kind AND (CAST(:scope AS text) IS NULL OR s.scope = :scope) AND s.pos <= :at"
    " AND s.to_seq IS NOT NULL AND s.to_seq > :at AND s.from_seq <= :at"
    " AND s.item_id <> ALL(CAST(:ranked AS text[])) ORDER BY s.pos LIMIT :n)) x ORDER BY x.pos LIMIT :n"
)


def _unmatched(
    engine: Engine, n: int, kind: str | None, scope: str | None, ranked: list[str], at: int | None
) -> list[tuple[Any, float]]:
    """Items that match nothing of the query (score 0.0) to fill a search up to k, oldest first."""
    kinds = list(MODALITIES) if kind is None else [kind]
    params = {"kinds": kinds, "scope": scope, "ranked": ranked, "n": n, "at": at}
    with engine.connect() as c:
        rows = c.execute(_UNMATCHED if at is None else _UNMATCHED_AT, params).all()
    return [(SubstrateItem(**loads(r[0])), 0.0) for r in rows]


def _ranked(
    engine: Engine,
    q: str,
    k: int,
    *,
    kind: str | None,
    scope: str | None,
    dense_weight: float = DENSE_WEIGHT,
    at: int | None = None,
) -> list[tuple[Any, float]]:
    """The items scoring above zero, best first, at most k."""
    domain = ALL_DOMAIN if scope is None else scope
    n_lex = max(k, LEX_CANDIDATES)
    n_dense = max(k, CANDIDATES)
    params = {
        "q": q,
        "k": k,
        "at": at,
        "n_lex": n_lex,
        "n_over": (LIVE_SLACK if at is None else PAST_SLACK) * n_lex,
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
        "head": HEAD,
        "max_terms": MAX_TERMS,
        "rare_df": RARE_DF,
        "lazy": NAME,
        "types": _ITEM_TYPES,
    }
    if at is not None:
        with engine.connect() as c:
            return _hits(c.exec_driver_sql(past_sql(scoped=scope is not None), params).all())
    ef = min(max(n_dense, HNSW_EF), 1000)  # pgvector's ef_search range; iterative scans go further when filters need it
    if len(q) <= PIPELINE_MAX_QUERY:
        try:
            for _ in range(2):  # a second round only when the domain asked for another variant than the one sent
                hits = _pipelined(engine, domain, ef, params)
                if hits is not None:
                    return hits
        except psycopg.Error:
            pass  # the plain path below reports it (or recovers) the way every SQLAlchemy statement does
    with engine.begin() as c:
        return _rank(c, embedder_state(c, domain, ef_search=ef), params)


# Per engine and domain, the (domain_id, dense, exact) the last state of the domain asked for: the variant of the
# ranking statement to send along with the state (a wrong guess only costs sending it again).
_VARIANTS: weakref.WeakKeyDictionary[Any, dict[str, tuple[int | None, bool, bool]]] = weakref.WeakKeyDictionary()
_MAX_VARIANTS = 4096


def _variant(state: EmbedderState) -> tuple[int | None, bool, bool]:
    return state.domain_id, state.dim > 0 and state.domain_id is not None, state.n_vectors <= EXACT_MAX


def _pipelined(engine: Engine, domain: str, ef: int, params: dict[str, Any]) -> list[tuple[Any, float]] | None:
    """BEGIN, the domain state (and settings), the ranking statement, COMMIT, in one round trip; None when the
    state asks for another variant of the statement than the one sent (it is known for the next round)."""
    known = _VARIANTS.setdefault(engine, {})
    guess = known.get(domain)
    state_sql, state_params = state_statement(domain, ef)
    raw = engine.raw_connection()
    try:
        dc: Any = raw.driver_connection
        # Prepared at once (psycopg would wait for a 5th execution, and forgets them all at any rollback on the
        # connection), and committed, not rolled back, for the same reason (the transaction wrote nothing).
        with dc.pipeline():
            got_state = dc.execute(state_sql, state_params, prepare=True)
            ranked = None
            if guess is not None:
                sql = ranking_sql(
                    scoped=params["scope"] is not None, dense=guess[1], exact=guess[2], dense_limit=_limit(params)
                )
                ranked = _execute(dc, sql, {**params, "did": guess[0]}, prepare=True)
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
    return _hits(rows) if guess == variant else None


def _rank(c: Any, state: EmbedderState, params: dict[str, Any]) -> list[tuple[Any, float]]:
    _, dense, exact = _variant(state)
    sql = ranking_sql(scoped=params["scope"] is not None, dense=dense, exact=exact, dense_limit=_limit(params))
    return _hits(c.exec_driver_sql(sql, {**params, "did": state.domain_id}).all())


def _execute(dc: Any, sql: str, params: dict[str, Any], *, prepare: bool | None = None) -> Any:
    """Run a ranking statement on the driver connection ``dc`` in PostgreSQL's own placeholders (statements.native):
    psycopg then sends it as it is, without parsing 5 kB of SQL for placeholders at each search. Only the pipelined
    path uses it: a psycopg error there falls back to the plain path, which SQLAlchemy reports (and recovers from)
    as it does for every statement."""
    query, names = native(sql)
    return psycopg.RawCursor(dc).execute(query, [params[n] for n in names], prepare=prepare)


def _limit(params: dict[str, Any]) -> int | None:
    """The nearest-vector count to write into the statement: the usual CANDIDATES (k <= CANDIDATES), else bound."""
    return CANDIDATES if params["n_dense"] == CANDIDATES else None


def _hits(rows: Any) -> list[tuple[Any, float]]:
    return [(SubstrateItem(**loads(doc)), float(score)) for doc, score in rows]
