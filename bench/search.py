"""Search at scale: 100,000 text items in one scope. search() latency vs the raw pgvector query, recall, refit.

Run: python bench/search.py [--n 100000] [--queries 200] [--root DIR] [--no-write]

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
- the refit after 1% of the items change (fold-in) and a full refit.
--root keeps the store between runs (the ingest is skipped when the scope already holds --n items).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import text  # noqa: E402

from bench.retrieval_quality import DEFAULT_DATA, write_section  # noqa: E402
from projections.embeddings import BM25_B, BM25_K1  # noqa: E402
from service import Substrate, embedding  # noqa: E402
from service.domain.items import SubstrateItem  # noqa: E402
from service.search.embedders import refit  # noqa: E402

SCOPE = "bench"
TARGET = 3.0  # the issue: search() p50 within 3x of the raw pgvector query
_SENT = re.compile(r"(?<=[.!?])\s+")


def corpus(n: int, data: Path, seed: int = 7) -> tuple[list[str], list[str]]:
    """n distinct passages (an abstract's title + 2-5 consecutive sentences) and the SciFact claims; deterministic."""
    docs = [json.loads(line) for line in (data / "corpus.jsonl").open(encoding="utf-8")]
    split = [(d["title"], [s for s in _SENT.split(d["text"]) if s.strip()]) for d in docs]
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[str] = []
    for _ in range(50 * n):
        if len(out) == n:
            break
        title, sents = rng.choice(split)
        w = rng.randint(2, 5)
        start = rng.randrange(max(1, len(sents) - w + 1))
        passage = " ".join([title, *sents[start : start + w]])
        if passage not in seen:
            seen.add(passage)
            out.append(passage)
    claims = [json.loads(line)["text"] for line in (data / "queries-train.jsonl").open(encoding="utf-8")]
    return out, claims


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


# Every item of the scope scored as the module docstring of service/embedding.py states: all postings of every
# query term, the exact cosine of every item that has a current vector, and the exact nearest neighbours (the best
# items without any query term). Set-based, independent of search()'s candidate lists.
_EXHAUSTIVE = text("""
WITH st AS (
  SELECT greatest(n_docs, :idf_docs)::float8 AS n, greatest(total_len::float8 / greatest(n_docs, 1), 1.0) AS avgdl
  FROM search_domains WHERE domain = :scope
), qw AS MATERIALIZED (
  SELECT q.term, ln(1 + (st.n - coalesce(f.df, 0) + 0.5) / (coalesce(f.df, 0) + 0.5)) AS idf, coalesce(f.df, 0) AS df
  FROM (SELECT DISTINCT l.lexeme AS term FROM unnest(to_tsvector('english', :q)) l) q
  CROSS JOIN st LEFT JOIN term_df f ON f.domain = :scope AND f.term = q.term
  ORDER BY coalesce(f.df, 0) > 0 DESC, 2 DESC, q.term LIMIT :max_terms
), lex AS MATERIALIZED (
  SELECT t.item_id, sum(qw.idf * t.tf * (:k1 + 1) / (t.tf + :k1 * (1 - :b + :b * t.dl / st.avgdl)))
         / (SELECT sum(idf) * (:k1 + 1) FROM qw) AS lex
  FROM qw JOIN item_terms t ON t.scope = :scope AND t.term = qw.term CROSS JOIN st GROUP BY t.item_id
), qv AS (
  SELECT sum(e.vec) AS v FROM qw JOIN embedder_terms e ON e.domain_id = :did AND e.term = qw.term
), cand AS (
  SELECT item_id FROM lex
  UNION SELECT * FROM (SELECT v.item_id FROM item_vectors v WHERE v.domain_id = :did
                       ORDER BY (v.embedding <=> (SELECT v FROM qv)) + 0 LIMIT :k) near
), scored AS (
  SELECT c.item_id, CASE WHEN v.item_id IS NULL THEN coalesce(l.lex, 0)
    ELSE :w * CASE WHEN 1 - (v.embedding <=> (SELECT v FROM qv)) >= :min_cos
                   THEN 1 - (v.embedding <=> (SELECT v FROM qv)) ELSE 0 END
         + (1 - :w) * coalesce(l.lex, 0) END AS score
  FROM cand c JOIN search_docs sd ON sd.item_id = c.item_id LEFT JOIN lex l ON l.item_id = c.item_id
  LEFT JOIN item_vectors v ON v.domain_id = :did AND v.item_id = c.item_id AND v.item_seq = sd.seq
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
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="SciFact folder (corpus.jsonl, queries)")
    ap.add_argument("--root", help="persistent store directory (reused between runs); default: ephemeral")
    ap.add_argument("--no-write", action="store_true", help="do not update bench/RESULTS.md")
    args = ap.parse_args()
    texts, claims = corpus(args.n, args.data)
    claims = claims[: args.queries]
    store = Substrate(root=args.root) if args.root else Substrate()
    have = len(store.all(scope=SCOPE, kind="text")) if args.root else 0
    ingest_s = ingest(store, texts) if have != args.n else float("nan")
    with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
        c.execute(text("VACUUM ANALYZE search_docs, item_terms, term_df, items"))  # as autovacuum would, now

    t0 = time.perf_counter()
    store.search("warm up", k=1, scope=SCOPE)
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
    store.search(claims[0], k=10, scope=SCOPE)
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
        f"Ingest (put_many) {ingest_s:.0f} s; first search incl. full fit {first_s:.1f} s.",
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
        f"| refit after 1% of items changed ({len(changed):,}; mode: {mode}), incl. that search | {fold_s:.1f} s |",
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
        "the postings, the HNSW scan, exact rescoring of every candidate, the k documents).",
    ]
    print("\n".join(lines))
    print(f"(store: {url.split('@')[-1]})")
    if not args.no_write:
        body = [
            "## Search at scale (bench/search.py)",
            "",
            f"Command: `python bench/search.py --n {args.n} --queries {args.queries}`",
            "",
            *lines,
        ]
        write_section("\n".join(body), "bench/search.py")


if __name__ == "__main__":
    main()
