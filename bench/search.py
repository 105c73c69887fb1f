"""Search at scale: 100,000 text items in one scope. search() latency vs the raw pgvector query, recall, refit.

Run: python -m bench.search --data DIR (or $SUBSTRATE_SCIFACT) [--n 100000] [--queries 200] [--root DIR] [--no-write]

Items are distinct passages of the SciFact corpus (an abstract's title plus 2-5 consecutive sentences, drawn with a
fixed seed), written through Substrate.put_many; queries are SciFact claims. Measured on one store and one fitted
embedding:
- search(q, k=10, scope) p50/p95 (one round trip: the domain state + settings and the one ranking statement),
  against the raw pgvector statement ``ORDER BY embedding <=> q LIMIT 10`` on the domain's vectors for the same
  query vectors, both at the default hnsw.ef_search (one statement) and at the ef_search search() runs with (one
  more statement to set it), each with its recall@10 against exact (sequential) search, and the ratio of search()
  to each. All three run in committed transactions (psycopg prepares repeated statements), warm (one untimed pass
  over every query first) and interleaved query by query in rotating order;
- recall@10 of search()'s final top 10 against the exhaustive ranking: every item scored by the module docstring's
  formula (an independent set-based statement here, not search() with other knobs);
- the upkeep after 1% of the items change (their indexing and the fold-in) and a full refit.
--root keeps the store between runs (the ingest is skipped when the scope already holds --n items).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import text  # noqa: E402

from bench.retrieval_quality import write_section  # noqa: E402
from bench.scifact import add_data_option, data_dir, passages  # noqa: E402
from bench.scifact import claims as load_claims  # noqa: E402
from projections.search_index import BM25_B, BM25_K1  # noqa: E402
from service import Substrate  # noqa: E402
from service.domain.items import SubstrateItem  # noqa: E402
from service.search import ranking as embedding  # noqa: E402
from service.search.embedders import refit  # noqa: E402

SCOPE = "bench"
TARGET = 3.0  # the issue: search() p50 within 3x of the raw pgvector query


def ingest(store: Substrate, texts: list[str]) -> float:
    t0 = time.perf_counter()
    store.put_many(
        SubstrateItem(kind="text", text=t, scope=SCOPE, id=f"b{i}", created_at=1.0) for i, t in enumerate(texts)
    )
    return time.perf_counter() - t0


def percentile(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(p * len(s)))]


def query_vectors(store: Substrate, did: int, claims: list[str]) -> list[str | None]:
    """Each claim's embedding exactly as search() builds it (sum of its terms' model rows), as vector text."""
    sql = text(
        "SELECT sum(e.vec)::text FROM (SELECT DISTINCT lexeme AS term FROM unnest(to_tsvector('english', :q))) q "
        "JOIN embedder_terms e ON e.domain_id = :did AND e.term = q.term"
    )
    with store.engine.connect() as c:
        return [c.execute(sql, {"q": q, "did": did}).scalar() for q in claims]


def raw_query(store: Substrate, did: int, v: str, exact: bool = False, ef: int | None = None) -> list[str]:
    """The raw vector query's top 10 (ef: set hnsw.ef_search first, in the same transaction, as search() does).

    Committed like search()'s transaction, so psycopg prepares this statement too (a rollback would forget it).
    """
    order = "(embedding <=> CAST(:v AS vector)) + 0" if exact else "embedding <=> CAST(:v AS vector)"
    with store.engine.begin() as c:
        if ef is not None:
            c.execute(
                text(
                    "SELECT set_config('hnsw.ef_search', :ef, true), "
                    "set_config('hnsw.iterative_scan', 'relaxed_order', true)"
                ),
                {"ef": str(ef)},
            )
        return list(
            c.execute(
                text(f"SELECT item_id FROM item_vectors WHERE domain_id = :did ORDER BY {order} LIMIT 10"),
                {"did": did, "v": v},
            ).scalars()
        )


def timed(f: Any, *args: Any, **kw: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = f(*args, **kw)
    return time.perf_counter() - t0, out


# Every live item of the scope holding a query term scored as docs/search.md states (every posting of every query
# term, read from the lists whole), the exact cosine of every item that has a vector of its live doc, and the exact
# nearest neighbours (the best items without any query term). Set-based, independent of search()'s candidates.
_EXHAUSTIVE = text("""
WITH st AS (
  SELECT greatest(n_docs, :idf_docs)::float8 AS n, greatest(total_len::float8 / greatest(n_docs, 1), 1.0) AS avgdl
  FROM search_domains WHERE domain = :scope
), qt AS (
  SELECT lexeme AS term, cardinality(positions) AS qtf FROM unnest(to_tsvector('english', :q))
), qw AS MATERIALIZED (
  SELECT qt.term, qt.qtf, ln(1 + (st.n - f.df + 0.5) / (f.df + 0.5)) AS idf, f.df FROM qt CROSS JOIN st
  CROSS JOIN LATERAL (SELECT greatest(0,
      coalesce((SELECT sum(n) FROM search_lists l WHERE l.term = qt.term AND l.scope = :scope), 0)
    - coalesce((SELECT sum(n) FROM search_deaths x WHERE x.term = qt.term AND x.scope = :scope), 0))::float8 AS df) f
  ORDER BY f.df > 0 DESC, 3 DESC, qt.term LIMIT :max_terms
), z AS (
  SELECT sum(qw.idf * qw.qtf * (:k1 + 1) / (qw.qtf + :k1 * (1 - :b + :b * q.dl / st.avgdl))) AS z
  FROM qw CROSS JOIN st CROSS JOIN (SELECT sum(qtf) AS dl FROM qt) q
), hold AS (
  SELECT DISTINCT u.doc FROM qw JOIN search_lists l ON l.term = qw.term AND l.scope = :scope, unnest(l.docs) u(doc)
), lex AS MATERIALIZED (
  SELECT d.doc, d.item_id, least(1.0, sum(qw.idf * t.tf * (:k1 + 1) / (t.tf + :k1 * (1 - :b + :b * d.dl / st.avgdl)))
         / (SELECT z FROM z)) AS lex
  FROM hold h JOIN search_docs d ON d.doc = h.doc AND d.to_seq IS NULL
  CROSS JOIN LATERAL unnest(d.terms, d.tfs) t(term, tf) JOIN qw ON qw.term = t.term CROSS JOIN st
  GROUP BY d.doc, d.item_id
), qv AS (
  SELECT sum(e.vec) AS v FROM qw JOIN embedder_terms e ON e.domain_id = :did AND e.term = qw.term
), live_vec AS (
  SELECT v.item_id, 1 - (v.embedding <=> (SELECT v FROM qv)) AS cos FROM item_vectors v
  JOIN search_docs d ON d.doc = v.item_seq AND d.item_id = v.item_id AND d.to_seq IS NULL WHERE v.domain_id = :did
), cand AS (
  SELECT item_id FROM lex UNION SELECT * FROM (SELECT item_id FROM live_vec ORDER BY cos DESC LIMIT :k) near
), scored AS (
  SELECT c.item_id, CASE WHEN v.cos IS NULL THEN coalesce(l.lex, 0)
    ELSE (1 - :w) * coalesce(l.lex, 0) + :w * greatest(0.0, (v.cos - :min_cos) / (1 - :min_cos)) END AS score
  FROM cand c LEFT JOIN lex l ON l.item_id = c.item_id LEFT JOIN live_vec v ON v.item_id = c.item_id
)
SELECT item_id FROM scored WHERE score > 0 ORDER BY score DESC, item_id LIMIT :k
""")


def exhaustive(store: Substrate, did: int, claims: list[str], k: int = 10) -> list[list[str]]:
    """Each claim's true top k (see _EXHAUSTIVE)."""
    knobs = {
        "scope": SCOPE,
        "did": did,
        "k": k,
        "k1": BM25_K1,
        "b": BM25_B,
        "w": embedding.DENSE_WEIGHT,
        "min_cos": embedding.MIN_COS,
        "max_terms": embedding.MAX_TERMS,
        "idf_docs": embedding.IDF_MIN_DOCS,
    }
    with store.engine.connect() as c:
        return [list(c.execute(_EXHAUSTIVE, {**knobs, "q": q}).scalars()) for q in claims]


def with_settings(store: Substrate, claims: list[str], **knobs: int) -> tuple[list[float], list[list[str]]]:
    """Latencies and top-10 ids of search() with some module knobs changed for the duration."""
    saved = {k: getattr(embedding, k) for k in knobs}
    for k, v in knobs.items():
        setattr(embedding, k, v)
    try:
        lat, top = [], []
        for q in claims:
            t0 = time.perf_counter()
            top.append([it.id for it, _ in store.search(q, k=10, scope=SCOPE)])
            lat.append(time.perf_counter() - t0)
        return lat, top
    finally:
        for k, v in saved.items():
            setattr(embedding, k, v)


def recall(got: list[list[Any]], truth: list[list[Any]]) -> float:
    return statistics.fmean(len(set(g) & set(t)) / max(1, len(t)) for g, t in zip(got, truth))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000, help="text items in the scope")
    ap.add_argument("--queries", type=int, default=200, help="SciFact claims used as queries")
    add_data_option(ap)
    ap.add_argument("--root", help="persistent store directory (reused between runs); default: ephemeral")
    ap.add_argument("--no-write", action="store_true", help="do not update bench/RESULTS.md")
    args = ap.parse_args()
    data = data_dir(args.data)
    texts = passages(args.n, data)
    claims = [c["text"] for c in load_claims(data)][: args.queries]
    store = Substrate(root=args.root) if args.root else Substrate()
    have = len(store.all(scope=SCOPE, kind="text")) if args.root else 0
    ingest_s = ingest(store, texts) if have != args.n else float("nan")
    with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
        c.execute(text("VACUUM ANALYZE"))  # as autovacuum would, now

    t0 = time.perf_counter()
    store.reindex()  # the upkeep: the index, then the domain's full fit
    first_s = time.perf_counter() - t0
    with store.engine.connect() as c:
        did, n_vec = c.execute(text("SELECT domain_id, n_vectors FROM embedders WHERE domain = :d"), {"d": SCOPE}).one()

    vecs = query_vectors(store, did, claims)
    ef = min(max(embedding.CANDIDATES, embedding.HNSW_EF), 1000)  # as search() sets it for k=10
    jobs = {
        "search": lambda q, v: [it.id for it, _ in store.search(q, k=10, scope=SCOPE)],
        "raw": lambda q, v: raw_query(store, did, v),
        "raw_ef": lambda q, v: raw_query(store, did, v, ef=ef),
    }
    # One untimed pass over every query first: each query's pages are then as warm for all three (the index and
    # postings exceed shared_buffers, so whichever ran first would pay for the others), and psycopg has prepared
    # the statements. Then one timed pass, the order of the three rotating from one query to the next.
    timings: dict[str, list[float]] = {name: [] for name in jobs}
    answers: dict[str, list[Any]] = {name: [] for name in jobs}
    for timed_pass in (False, True):
        for i, (q, v) in enumerate(zip(claims, vecs)):
            names = [n for n in jobs if v is not None or n == "search"]
            for name in names[i % len(names) :] + names[: i % len(names)]:
                dt, got = timed(jobs[name], q, v)
                if timed_pass:
                    timings[name].append(dt)
                    answers[name].append(got)
    lat, top = timings["search"], answers["search"]
    raw_lat, raw_ids, ann_lat, ann_ids = timings["raw"], answers["raw"], timings["raw_ef"], answers["raw_ef"]
    exact_ids: list[list[str]] = []
    exact_lat = []
    for v in vecs:
        if v is not None:
            dt, got = timed(raw_query, store, did, v, exact=True)
            exact_lat.append(dt)
            exact_ids.append(got)

    truth = exhaustive(store, did, claims)
    deeper = {
        "PER_TERM": 2 * embedding.PER_TERM,
        "RARE_DF": 2 * embedding.RARE_DF,
        "LEX_CANDIDATES": 2 * embedding.LEX_CANDIDATES,
        "CANDIDATES": 2 * embedding.CANDIDATES,
    }
    deeper_lat, deeper_top = with_settings(store, claims, **deeper)

    rng = random.Random(11)
    changed = rng.sample(range(args.n), max(1, args.n // 100))
    store.put_many(
        SubstrateItem(kind="text", text=texts[(i + 1) % args.n], scope=SCOPE, id=f"b{i}", created_at=1.0)
        for i in changed
    )
    t0 = time.perf_counter()
    store.reindex()
    fold_s = time.perf_counter() - t0
    with store.engine.connect() as c:
        mode = c.execute(text("SELECT params->>'mode' FROM embedders WHERE domain = :d"), {"d": SCOPE}).scalar()
    t0 = time.perf_counter()
    refit(store.engine, SCOPE, full=True)
    full_s = time.perf_counter() - t0
    with store.engine.connect() as c:
        parts = c.execute(text("SELECT params->'seconds' FROM embedders WHERE domain = :d"), {"d": SCOPE}).scalar()
    url = store.url
    store.close()

    p50, raw50 = 1000 * statistics.median(lat), 1000 * statistics.median(raw_lat)
    ann50 = 1000 * statistics.median(ann_lat)
    r_default, r_same = p50 / raw50, p50 / ann50
    rec_default, rec_same = recall(raw_ids, exact_ids), recall(ann_ids, exact_ids)
    split = ", ".join(f"{k} {v:.1f} s" for k, v in (parts or {}).items())
    knobs = ", ".join(f"{k} {v}" for k, v in deeper.items())

    def verdict(r: float) -> str:
        return f"{r:.2f}x ({'meets' if r <= TARGET else 'misses'} {TARGET:g}x)"

    lines = [
        f"{args.n:,} text items in one scope ({n_vec:,} vectors, 256-d); {len(claims)} SciFact claims as queries, "
        "k=10.",
        f"Ingest (put_many) {ingest_s:.0f} s; upkeep (index + full fit) {first_s:.1f} s.",
        "",
        "| measure | value |",
        "| --- | --- |",
        f"| search() p50 / p95 | {p50:.2f} ms / {1000 * percentile(lat, 0.95):.2f} ms |",
        f"| raw pgvector `ORDER BY embedding <=> q LIMIT 10` p50, default ef_search 40 (recall@10 vs exact "
        f"{rec_default:.3f}) | {raw50:.2f} ms |",
        f"| raw pgvector p50 at search()'s ef_search {ef} (recall@10 vs exact {rec_same:.3f}) | {ann50:.2f} ms |",
        f"| ratio search() / raw p50 at default ef_search 40 | {verdict(r_default)} |",
        f"| ratio search() / raw p50 at the same ef_search {ef} | {verdict(r_same)} |",
        f"| exact (sequential) vector search p50 | {1000 * statistics.median(exact_lat):.2f} ms |",
        f"| recall@10 search() vs exhaustive (every item scored by the documented formula) | "
        f"{recall(top, truth):.3f} |",
        f"| the same with doubled candidates ({knobs}): p50, recall | "
        f"{1000 * statistics.median(deeper_lat):.2f} ms, {recall(deeper_top, truth):.3f} |",
        f"| upkeep after 1% of items changed ({len(changed):,}: index + refit, mode: {mode}) | {fold_s:.1f} s |",
        f"| full refit (read postings, TF-IDF + SVD fit, COPY, HNSW build + swap) | {full_s:.1f} s ({split}) |",
    ]
    met = [
        name for name, r in (("default ef_search 40", r_default), (f"the same ef_search {ef}", r_same)) if r <= TARGET
    ]
    lines += [
        "",
        f'The issue\'s {TARGET:g}x is against "the raw pgvector query on the same vectors" with recall@10 >= 0.95. '
        f"The raw query has recall@10 {rec_default:.3f} at the default ef_search 40 and {rec_same:.3f} at "
        f"ef_search {ef}, the setting search() runs with. search() p50 is {r_default:.2f}x the first and "
        f"{r_same:.2f}x the second: the {TARGET:g}x target is "
        + (f"met against {' and '.join(met)}." if met else "met against neither."),
        "search() = one round trip: the domain state and the one ranking statement, pipelined (BM25 candidates from "
        "the posting lists, the HNSW scan, exact rescoring of every candidate, the tail, the k documents).",
    ]
    print("\n".join(lines))
    print(f"(store: {url.split('@')[-1]})")
    if not args.no_write:
        body = [
            "## Search at scale (bench/search.py)",
            "",
            f"Command: `python -m bench.search --data $SUBSTRATE_SCIFACT --n {args.n} --queries {args.queries}`",
            "",
            *lines,
        ]
        write_section("\n".join(body), "bench/search.py")


if __name__ == "__main__":
    main()
