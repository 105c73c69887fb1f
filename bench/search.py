"""Search at scale: 100,000 text items in one scope. search() latency vs the raw pgvector query, recall, refit.

Run: python bench/search.py [--n 100000] [--queries 200] [--root DIR] [--no-write]

Items are distinct passages of the SciFact corpus (an abstract's title plus 2-5 consecutive sentences, drawn with a
fixed seed), written through Substrate.put_many; queries are SciFact claims. Measured on one store and one fitted
embedding:
- search(q, k=10, scope) p50/p95 (two round trips: freshness + the one ranking statement), against the raw
  pgvector statement ``ORDER BY embedding <=> q LIMIT 10`` on the domain's vectors (default hnsw.ef_search) for
  the same query vectors, and their ratio;
- recall@10 of the HNSW scan as search() runs it against exact (sequential) search in the same embedding, and
  recall@10 of search()'s final top 10 against an exhaustive search() (exact vectors, every posting read);
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
from service import Substrate, embedding  # noqa: E402
from service.items import SubstrateItem  # noqa: E402
from service.vectors import refit  # noqa: E402

SCOPE = "bench"
NOTE = (
    "search() runs two candidate scans (BM25 over postings, HNSW), an exact rescoring of every candidate and a "
    "freshness round trip; it is compared with the raw vector query at the default ef_search (the issue's 3x "
    "target, not met) and at the ef_search it needs for recall >= 0.95 on these LSA vectors."
)
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
        passage = " ".join([title, *sents[start:start + w]])
        if passage not in seen:
            seen.add(passage)
            out.append(passage)
    claims = [json.loads(line)["text"] for line in (data / "queries-train.jsonl").open(encoding="utf-8")]
    return out, claims


def ingest(store: Substrate, texts: list[str]) -> float:
    t0 = time.perf_counter()
    store.put_many(SubstrateItem(kind="text", text=t, scope=SCOPE, id=f"b{i}", created_at=1.0)
                   for i, t in enumerate(texts))
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


def timed_raw(store: Substrate, did: int, vecs: list[str], exact: bool, ef: int | None = None) -> tuple[list, list]:
    order = "(embedding <=> CAST(:v AS vector)) + 0" if exact else "embedding <=> CAST(:v AS vector)"
    sql = text(f"SELECT item_id FROM item_vectors WHERE domain_id = :did ORDER BY {order} LIMIT 10")
    lat, ids = [], []
    for v in vecs:
        t0 = time.perf_counter()
        with store.engine.connect() as c:
            if ef is not None:
                c.execute(text("SELECT set_config('hnsw.ef_search', :ef, true), "
                               "set_config('hnsw.iterative_scan', 'relaxed_order', true)"), {"ef": str(ef)})
            ids.append(c.execute(sql, {"did": did, "v": v}).scalars().all())
        lat.append(time.perf_counter() - t0)
    return lat, ids


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

    for q in claims[:20]:
        store.search(q, k=10, scope=SCOPE)  # warm caches
    lat, top = [], []
    for q in claims:
        t0 = time.perf_counter()
        top.append([it.id for it, _ in store.search(q, k=10, scope=SCOPE)])
        lat.append(time.perf_counter() - t0)
    vecs = [v for v in query_vectors(store, did, claims) if v is not None]
    raw_lat, raw_ids = timed_raw(store, did, vecs, exact=False)
    ef = max(embedding.CANDIDATES, embedding.HNSW_EF)
    ann_lat, ann_ids = timed_raw(store, did, vecs, exact=False, ef=ef)
    exact_lat, exact_ids = timed_raw(store, did, vecs, exact=True)

    exhaustive = with_settings(store, claims, EXACT_MAX=10**9, PER_TERM=10**9, RARE_DF=10**9)[1]
    deeper_lat, deeper = with_settings(store, claims, PER_TERM=256, RARE_DF=5000, CANDIDATES=40)

    rng = random.Random(11)
    changed = rng.sample(range(args.n), max(1, args.n // 100))
    store.put_many(SubstrateItem(kind="text", text=texts[(i + 1) % args.n], scope=SCOPE, id=f"b{i}", created_at=1.0)
                   for i in changed)
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
    split = ", ".join(f"{k} {v:.1f} s" for k, v in (parts or {}).items())
    lines = [
        f"{args.n:,} text items in one scope ({n_vec:,} vectors, 256-d); {len(claims)} SciFact claims as queries, "
        "k=10.",
        f"Ingest (put_many) {ingest_s:.0f} s; first search incl. full fit {first_s:.1f} s.",
        "",
        "| measure | value |",
        "| --- | --- |",
        f"| search() p50 / p95 | {p50:.2f} ms / {1000 * percentile(lat, 0.95):.2f} ms |",
        f"| raw pgvector `ORDER BY embedding <=> q LIMIT 10` p50 (ef_search 40) | {raw50:.2f} ms |",
        f"| ratio search() / raw p50 | {p50 / raw50:.2f}x |",
        f"| raw pgvector at search()'s ef_search {ef} (iterative scan) p50 | {ann50:.2f} ms |",
        f"| ratio search() / raw p50 at the same ef_search | {p50 / ann50:.2f}x |",
        f"| exact (sequential) vector search p50 | {1000 * statistics.median(exact_lat):.2f} ms |",
        f"| recall@10 HNSW as search() runs it (ef_search {ef}, iterative scan) vs exact | "
        f"{recall(ann_ids, exact_ids):.3f} |",
        f"| recall@10 HNSW at default ef_search 40 vs exact | {recall(raw_ids, exact_ids):.3f} |",
        f"| recall@10 search() vs exhaustive search() (exact vectors, all postings) | {recall(top, exhaustive):.3f} |",
        f"| the same with deeper candidates (PER_TERM 256, RARE_DF 5000, CANDIDATES 40): p50, recall | "
        f"{1000 * statistics.median(deeper_lat):.2f} ms, {recall(deeper, exhaustive):.3f} |",
        f"| refit after 1% of items changed ({len(changed):,}; mode: {mode}), incl. that search | {fold_s:.1f} s |",
        f"| full refit (read postings, TF-IDF + SVD fit, COPY, HNSW build + swap) | {full_s:.1f} s ({split}) |",
    ]
    lines += ["", NOTE]
    print("\n".join(lines))
    print(f"(store: {url.split('@')[-1]})")
    if not args.no_write:
        body = ["## Search at scale (bench/search.py)", "",
                f"Command: `python bench/search.py --n {args.n} --queries {args.queries}`", "", *lines]
        write_section("\n".join(body), "bench/search.py")


if __name__ == "__main__":
    main()
