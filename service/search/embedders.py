"""Per-domain embedders: fit TF-IDF + truncated SVD on one domain's own text items, persist it, embed into pgvector.

Run by the upkeep (``service.search.upkeep``), never by a search. A domain (one scope, or ``*`` for everything) is
refitted only when its ``search_domains.changed_seq`` differs from the ``fitted_seq`` its embedder was fitted at.
A refit either folds the changed items into the existing model (cheap; a few HNSW inserts) or, when the domain
drifted too far since the last full fit, fits a new model and bulk-loads a fresh vector partition (COPY, then index
build, then swap). Everything a fit reads is the domain's own live docs (``projections.search_index``) as of the
search checkpoint, so a scope's model never sees another scope's text (MXR-080-0237). A vector records the doc it
embeds (``item_seq``); a search counts it only while that doc is the item's live one.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from pgvector.psycopg.vector import register_vector_info
from psycopg.types import TypeInfo
from sqlalchemy import text
from sqlalchemy.dialects.postgresql.psycopg import dialect as psycopg_dialect
from sqlalchemy.engine import Connection, Engine

from projections.items import ITEM_EVENTS
from projections.jsonutil import dumps
from projections.search_index import ALL_DOMAIN

__all__ = [
    "DIM",
    "MIN_FIT_DOCS",
    "NO_PARALLEL",
    "EmbedderState",
    "embedder_state",
    "refit",
    "state_from_row",
    "state_statement",
]

DIM = 256  # the vector(256) columns of migration 0002; smaller fits are zero-padded (cosine is unchanged)
MIN_FIT_DOCS = 10  # below this many text items a domain ranks lexically: too little text to learn from
MAX_VOCAB = 60_000
DRIFT = 0.2  # fold-ins beyond this fraction of the fitted corpus trigger a full refit
VERSION = "tfidf-svd-1"
_SVD_ITER = 4
_LOCK_NS = 80_0237  # advisory lock namespace: one refit per domain at a time
_SWAP_NS = 80_0238  # advisory lock namespace: one full fit (partition swap) at a time

_STATE = text(
    "SELECT d.changed_seq, d.n_text, e.domain_id, e.dim, e.n_vectors, e.fitted_seq, e.version, e.n_fit, e.n_folded, "
    "e.vocab "
    "FROM (SELECT CAST(:domain AS text) AS domain) x LEFT JOIN search_domains d USING (domain) "
    "LEFT JOIN embedders e USING (domain)"
)
_SCOPE = "AND d.scope = :scope "
# A domain's live text docs, in a deterministic order (the fit's rows), or (``pending``) those of the items an item
# event touched since the fit: O(changes), not O(domain). Vectors of changed or removed items were already deleted
# by the inline ``vectors`` projector in the writing transaction.
_CORPUS = (
    "SELECT d.item_id, d.doc, d.kind, d.terms, d.tfs FROM search_docs d {pending}"
    "WHERE d.to_seq IS NULL AND d.has_text {scope}ORDER BY d.thash, d.doc"
)
_PENDING = (
    "JOIN (SELECT DISTINCT x.item_id FROM public.events e CROSS JOIN LATERAL (SELECT e.data->'item'->>'id' AS item_id "
    "UNION ALL SELECT e.data->>'removed' UNION ALL SELECT e.data->>'id') x WHERE e.seq > :since "
    "AND e.type = ANY(CAST(:types AS text[])) AND x.item_id IS NOT NULL) t USING (item_id) "
)
_TYPES = sorted(ITEM_EVENTS | {"ItemRemoved"})
_UPSERT = text(
    "INSERT INTO embedders (domain, domain_id, version, dim, n_fit, n_folded, n_vectors, vocab, fitted_seq, "
    "fitted_at, params) VALUES (:domain, :did, :version, :dim, :n_fit, :n_folded, :n_vectors, :vocab, :seq, now(), "
    "CAST(:params AS jsonb)) ON CONFLICT (domain) DO UPDATE SET version = EXCLUDED.version, dim = EXCLUDED.dim, "
    "n_fit = EXCLUDED.n_fit, n_folded = EXCLUDED.n_folded, n_vectors = EXCLUDED.n_vectors, vocab = EXCLUDED.vocab, "
    "fitted_seq = EXCLUDED.fitted_seq, fitted_at = EXCLUDED.fitted_at, params = EXCLUDED.params"
)


@dataclass(frozen=True)
class EmbedderState:
    """What a search needs to know about a domain's embedder (``dim == 0``: lexical only)."""

    domain: str
    domain_id: int | None
    dim: int
    n_vectors: int


# A domain's embedder, plus (in the same round trip) this transaction's settings for the ranking statement that
# follows: ef_search, iterative scans for when a kind filter drops rows, generic plans, and no parallel workers.
# psycopg prepares a statement from its 5th execution on a connection; the ranking statement fences every lookup
# into an index probe, so its generic plan is the plan, and reusing it saves the ~1 ms the planner spends on it per
# search. The generic plan cannot know how short the tail is (a scan of the log after the checkpoint), so it planned
# a parallel scan for it: launching the worker cost 5-12 ms per search (a 4 ms statement answered in 10-17 ms at
# 100,000 items) and a core more per search under load, for a tail that is empty or short.
NO_PARALLEL = "set_config('max_parallel_workers_per_gather', '0', true)"
_STATE_FOR_SEARCH = text(
    "SELECT e.domain_id, e.dim, e.n_vectors, "
    "set_config('hnsw.ef_search', :ef, true), set_config('hnsw.iterative_scan', 'relaxed_order', true), "
    "set_config('plan_cache_mode', 'force_generic_plan', true), " + NO_PARALLEL + " "
    "FROM (SELECT CAST(:domain AS text) AS domain) x LEFT JOIN embedders e USING (domain)"
)
# search() sends it through the driver, in one pipeline with the ranking statement (service/search/ranking.py).
_STATE_FOR_SEARCH_DRIVER = str(_STATE_FOR_SEARCH.compile(dialect=psycopg_dialect()))


def embedder_state(conn: Connection, domain: str, *, ef_search: int = 40) -> EmbedderState:
    """The domain's last fitted embedder; sets this transaction's ef_search.

    Also makes the rest of the transaction use generic plans for prepared statements (the ranking statement).
    """
    return state_from_row(domain, conn.execute(_STATE_FOR_SEARCH, _state_params(domain, ef_search)).one())


def state_statement(domain: str, ef_search: int) -> tuple[str, dict[str, Any]]:
    """``embedder_state``'s statement in the driver's placeholders, and its parameters (to pipeline it)."""
    return _STATE_FOR_SEARCH_DRIVER, _state_params(domain, ef_search)


def _state_params(domain: str, ef_search: int) -> dict[str, Any]:
    """The parameters of the state statement."""
    return {"domain": domain, "ef": str(ef_search)}


def state_from_row(domain: str, r: Sequence[Any]) -> EmbedderState:
    """The EmbedderState of one row of the state statement."""
    did, dim, n_vec = r[0], r[1], r[2]
    return EmbedderState(domain, did, int(dim or 0), int(n_vec or 0))


def refit(engine: Engine, domain: str, *, full: bool = False) -> None:
    """Bring ``domain``'s embedder up to date with the search read models (fold-in, or a full fit when drifted or
    ``full``); one transaction."""
    with engine.begin() as conn:
        conn.execute(text("SELECT pg_advisory_xact_lock(:ns, hashtext(:domain))"), {"ns": _LOCK_NS, "domain": domain})
        r = conn.execute(_STATE, {"domain": domain}).one()
        changed, n_text, did, dim, n_vec, fitted, version, n_fit, n_folded, vocab = r
        if changed is None or (not full and did is not None and fitted == changed and version == VERSION):
            return
        if did is None:
            did = int(conn.execute(text("SELECT nextval('embedder_ids')")).scalar_one())
        scope = None if domain == ALL_DOMAIN else domain
        base = {"domain": domain, "did": did, "version": VERSION, "seq": changed}
        if n_text < MIN_FIT_DOCS:
            _lexical_only(conn, did, base, n_text)
            return
        # A domain whose content went back in time (a prefix rebuild) is refitted from scratch.
        if not full and dim and version == VERSION and changed > fitted:
            t0 = time.perf_counter()
            folded = _fold_in(conn, did, scope, since=fitted, limit=max(0, int(DRIFT * n_fit) - n_folded))
            if folded is not None:
                # n_vectors is an estimate between full fits (the projector deletes rows as items change).
                conn.execute(
                    _UPSERT,
                    {
                        **base,
                        "dim": dim,
                        "n_fit": n_fit,
                        "n_folded": n_folded + folded[0],
                        "n_vectors": max(0, n_vec + folded[1]),
                        "vocab": vocab,
                        "params": dumps(
                            {
                                "mode": "fold-in",
                                "folded": folded[0],
                                "seconds": _rounded({"total": time.perf_counter() - t0}),
                            }
                        ),
                    },
                )
                return
        _full_fit(conn, did, scope, base)


def _lexical_only(conn: Connection, did: int, base: dict[str, Any], n_text: int) -> None:
    """Record a domain with no embedding (too few texts to fit one): its search ranks lexically."""
    _clear(conn, did)
    params = {"mode": "lexical", "n_text": n_text}
    conn.execute(
        _UPSERT, {**base, "dim": 0, "n_fit": 0, "n_folded": 0, "n_vectors": 0, "vocab": 0, "params": dumps(params)}
    )


def _clear(conn: Connection, did: int) -> None:
    conn.execute(text("DELETE FROM item_vectors WHERE domain_id = :did"), {"did": did})
    conn.execute(text("DELETE FROM embedder_terms WHERE domain_id = :did"), {"did": did})


def _corpus(conn: Connection, scope: str | None, since: int | None = None) -> list[Any]:
    sql = _CORPUS.format(scope=_SCOPE if scope is not None else "", pending=_PENDING if since is not None else "")
    return list(conn.execute(text(sql), {"scope": scope, "since": since, "types": _TYPES}).all())


def _cursor(conn: Connection) -> Any:
    """A raw psycopg cursor whose adapters (only) know pgvector's binary format."""
    raw = conn.connection.driver_connection
    assert raw is not None
    cur = raw.cursor()
    register_vector_info(cur, TypeInfo.fetch(raw, "vector"))
    return cur


def _weights(tfs: list[int]) -> np.ndarray:
    return 1.0 + np.log(np.asarray(tfs, dtype=np.float64))


def _fold_in(conn: Connection, did: int, scope: str | None, *, since: int, limit: int) -> tuple[int, int] | None:
    """Embed the text items written since ``since`` with the current model: (items read, vector rows net change).

    None when more changed than the drift budget ``limit`` allows (the caller fits from scratch instead).
    """
    rows = _corpus(conn, scope, since)
    if len(rows) > limit:
        return None
    if not rows:
        return 0, 0
    # A fit racing a write may have stored a vector of an older version: replace whatever is there.
    gone = conn.execute(
        text("DELETE FROM item_vectors WHERE domain_id = :did AND item_id = ANY(CAST(:ids AS text[]))"),
        {"did": did, "ids": [r[0] for r in rows]},
    ).rowcount
    terms = sorted({t for r in rows for t in r[3]})
    cur = _cursor(conn)
    cur.execute("SELECT term, vec FROM embedder_terms WHERE domain_id = %s AND term = ANY(%s)", (did, terms))
    vecs = {t: v.to_numpy() for t, v in cur.fetchall()}
    out = []
    for item_id, seq, kind, ts, tfs in rows:
        keep = [(vecs[t], w) for t, w in zip(ts, _weights(tfs)) if t in vecs]
        if not keep:
            continue
        z = np.sum([v * w for v, w in keep], axis=0)
        norm = float(np.linalg.norm(z))
        if norm > 0:
            out.append((did, item_id, seq, kind, (z / norm).astype(np.float32)))
    _copy_vectors(cur, "item_vectors", out)
    return len(rows), len(out) - gone


def _copy_vectors(cur: Any, table: str, rows: list[tuple[Any, ...]]) -> None:
    with cur.copy(f"COPY {table} (domain_id, item_id, item_seq, kind, embedding) FROM STDIN (FORMAT BINARY)") as cp:
        cp.set_types(["int4", "text", "int8", "text", "vector"])
        for row in rows:
            cp.write_row(row)


def _fit(rows: list[Any]) -> tuple[list[str], np.ndarray, np.ndarray, list[int], int] | None:
    """TF-IDF (sublinear tf, smooth idf, l2 rows) + TruncatedSVD: (vocabulary, term vectors, doc vectors, doc rows)."""
    from sklearn.decomposition import TruncatedSVD
    from threadpoolctl import threadpool_limits

    index: dict[str, int] = {}
    cols: list[int] = []
    vals: list[np.ndarray] = []
    ptr = [0]
    for r in rows:
        cols.extend(index.setdefault(t, len(index)) for t in r[3])
        vals.append(_weights(r[4]))
        ptr.append(len(cols))
    n = len(rows)
    X = sp.csr_matrix((np.concatenate(vals), np.asarray(cols), np.asarray(ptr)), shape=(n, len(index)))
    df = np.bincount(X.indices, minlength=len(index))
    names = sorted(index, key=index.__getitem__)
    min_df = 2 if n >= 100 else 1
    # Most frequent first, ties by term: the vocabulary is a deterministic function of the corpus.
    order = sorted((j for j in range(len(names)) if df[j] >= min_df), key=lambda j: (-df[j], names[j]))
    keep = np.sort(np.asarray(order[:MAX_VOCAB], dtype=np.int64))
    if len(keep) < 3:
        return None
    X = X[:, keep]
    idf = np.log((1.0 + n) / (1.0 + df[keep])) + 1.0
    X = sp.csr_matrix(X.multiply(idf[None, :]))
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    ok = np.flatnonzero(norms > 0)
    X = sp.csr_matrix(sp.diags(1.0 / np.where(norms > 0, norms, 1.0)) @ X)
    dim = min(DIM, len(ok) - 1, len(keep) - 1)
    if dim < 2:
        return None
    svd = TruncatedSVD(n_components=dim, n_iter=_SVD_ITER, random_state=0)
    # One BLAS thread: measured faster here than two (threads contend with the database for 2 cores).
    with threadpool_limits(limits=1):
        svd.fit(X[ok])
    V = svd.components_  # (dim, vocab)
    Z = np.asarray(X[ok] @ V.T)
    Z /= np.maximum(np.linalg.norm(Z, axis=1, keepdims=True), 1e-12)
    term_vecs = (V * idf[None, :]).T
    pad = DIM - dim
    if pad:
        Z = np.pad(Z, ((0, 0), (0, pad)))
        term_vecs = np.pad(term_vecs, ((0, 0), (0, pad)))
    return [names[j] for j in keep], term_vecs.astype(np.float32), Z.astype(np.float32), [int(i) for i in ok], dim


def _full_fit(conn: Connection, did: int, scope: str | None, base: dict[str, Any]) -> None:
    # Full fits take turns: each ends by swapping a partition of item_vectors (ACCESS EXCLUSIVE on the parent) while
    # holding the ACCESS SHARE its CREATE TABLE ... LIKE took, so two at once would deadlock each other.
    conn.execute(text("SELECT pg_advisory_xact_lock(:ns, 0)"), {"ns": _SWAP_NS})
    t0 = time.perf_counter()
    rows = _corpus(conn, scope)
    t1 = time.perf_counter()
    fitted = _fit(rows)
    t2 = time.perf_counter()
    if fitted is None:
        _lexical_only(conn, did, base, len(rows))
        return
    vocab, term_vecs, Z, ok, dim = fitted
    cur = _cursor(conn)
    conn.execute(text("DELETE FROM embedder_terms WHERE domain_id = :did"), {"did": did})
    with cur.copy("COPY embedder_terms (domain_id, term, vec) FROM STDIN (FORMAT BINARY)") as cp:
        cp.set_types(["int4", "text", "vector"])
        for t, v in zip(vocab, term_vecs):
            cp.write_row((did, t, v))
    vectors = [(did, rows[i][0], rows[i][1], rows[i][2], Z[j]) for j, i in enumerate(ok)]
    indexed = _swap_partition(conn, cur, did, vectors)
    t3 = time.perf_counter()
    seconds = {"read": t1 - t0, "fit": t2 - t1, "load": t3 - t2 - indexed, "index": indexed}
    conn.execute(
        _UPSERT,
        {
            **base,
            "dim": dim,
            "n_fit": len(rows),
            "n_folded": 0,
            "n_vectors": len(ok),
            "vocab": len(vocab),
            "params": dumps(
                {
                    "mode": "full",
                    "svd_iter": _SVD_ITER,
                    "idf": "smooth",
                    "tf": "sublinear",
                    "seconds": _rounded(seconds),
                }
            ),
        },
    )


def _rounded(seconds: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 3) for k, v in seconds.items()}


def _swap_partition(conn: Connection, cur: Any, did: int, rows: list[tuple[Any, ...]]) -> float:
    """Bulk-load a fresh table, build its indexes once, then swap it in as the domain's partition (index seconds)."""
    # Identifiers are built from our own integer id and a random suffix, never from user input.
    part = f"item_vectors_p{int(did)}"
    new = f"{part}_{uuid.uuid4().hex[:8]}"
    conn.execute(text(f"CREATE TABLE {new} (LIKE item_vectors INCLUDING DEFAULTS)"))
    _copy_vectors(cur, new, rows)
    t0 = time.perf_counter()
    conn.execute(text(f"ALTER TABLE {new} ADD PRIMARY KEY (domain_id, item_id)"))
    conn.execute(text(f"CREATE INDEX ON {new} (item_id)"))
    # One graph per domain; build memory comes from the server's maintenance_work_mem.
    conn.execute(
        text(f"CREATE INDEX ON {new} USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 128)")
    )
    conn.execute(text(f"ALTER TABLE {new} ADD CONSTRAINT {new}_domain CHECK (domain_id = {int(did)})"))
    conn.execute(text(f"DROP TABLE IF EXISTS {part}"))
    conn.execute(text(f"ALTER TABLE {new} RENAME TO {part}"))
    conn.execute(text(f"ALTER TABLE item_vectors ATTACH PARTITION {part} FOR VALUES IN ({int(did)})"))
    conn.execute(text(f"ANALYZE {part}"))
    return time.perf_counter() - t0
