"""Retrieval quality on SciFact: Substrate.search vs a plain BM25 baseline computed in the same run.

Run: python -m bench.retrieval_quality --data DIR (or $SUBSTRATE_SCIFACT) [--queries N] [--no-write]

Ingests corpus.jsonl into one scope through Substrate.put_many (title + abstract as the item text, the doc id in
the payload), lets the upkeep index it and fit the scope's embedder (``Substrate.reindex``), runs every training
claim that has judgements through Substrate.search(k=100, scope=...), and prints nDCG@10 and Recall@100 on a fixed
half/half split of the claims (``bench.scifact.split``: the knobs were tuned on the first half only; the second is
held out), beside a plain BM25 (numpy/scipy; lowercase word tokens, scikit-learn's English stopwords, no stemming,
k1=0.9 b=0.4) and the same search with the embedding weight set to 0 (lexical only).
Writes (replaces) its own section of bench/RESULTS.md unless --no-write.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.scifact import add_data_option, corpus, data_dir, judged, split  # noqa: E402
from service import Substrate  # noqa: E402
from service.domain.items import SubstrateItem  # noqa: E402
from service.search import ranking  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
SCOPE = "scifact"


def metrics(ranked: list[str], rel: dict[str, int]) -> tuple[float, float]:
    """nDCG@10 (graded gains, log2 discount) and Recall@100 of one ranked doc-id list."""
    dcg = sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(rel.values(), reverse=True)[:10]))
    recall = len({d for d in ranked[:100] if d in rel}) / len(rel)
    return (dcg / ideal if ideal else 0.0), recall


class PlainBM25:
    """Okapi BM25 over lowercase word tokens minus English stopwords; no stemming (the baseline)."""

    def __init__(self, docs: list[str], k1: float = 0.9, b: float = 0.4) -> None:
        from sklearn.feature_extraction.text import CountVectorizer

        self.cv = CountVectorizer(token_pattern=r"(?u)\b\w+\b", stop_words="english", dtype=np.float64)
        tf = self.cv.fit_transform(docs).tocoo()
        n = tf.shape[0]
        df = np.bincount(tf.col, minlength=tf.shape[1])
        dl = np.bincount(tf.row, weights=tf.data, minlength=n)
        self.idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
        sat = tf.data * (k1 + 1) / (tf.data + k1 * (1 - b + b * dl[tf.row] / dl.mean()))
        self.w = sp.csr_matrix((sat, (tf.row, tf.col)), shape=tf.shape).T.tocsr()

    def top(self, query: str, k: int) -> np.ndarray:
        q = (self.cv.transform([query]) > 0).astype(np.float64).multiply(self.idf)
        scores = np.asarray((q @ self.w).todense()).ravel()
        return np.argsort(-scores, kind="stable")[:k]


def run_search(store: Substrate, queries: list[dict[str, str]], qrels: dict[str, dict[str, int]]) -> dict[str, Any]:
    nd, rc, lat = [], [], []
    for q in queries:
        t0 = time.perf_counter()
        hits = store.search(q["text"], k=100, scope=SCOPE)
        lat.append(time.perf_counter() - t0)
        n, r = metrics([it.payload["doc_id"] for it, _ in hits], qrels[q["_id"]])
        nd.append(n)
        rc.append(r)
    return {"ndcg10": statistics.fmean(nd), "recall100": statistics.fmean(rc), "p50_ms": 1000 * statistics.median(lat)}


def load_store(store: Substrate, docs: list[dict[str, str]]) -> tuple[float, float]:
    """Ingest the abstracts, then index and fit them; (ingest seconds, upkeep seconds)."""
    t0 = time.perf_counter()
    store.put_many(
        SubstrateItem(
            kind="text",
            text=d["title"] + "\n" + d["text"],
            payload={"doc_id": d["_id"]},
            scope=SCOPE,
            id=f"doc-{d['_id']}",
        )
        for d in docs
    )
    t1 = time.perf_counter()
    store.reindex()
    return t1 - t0, time.perf_counter() - t1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_option(ap)
    ap.add_argument("--queries", type=int, default=0, help="use only the first N judged claims of each half (0 = all)")
    ap.add_argument("--url", help="PostgreSQL URL (default: a fresh ephemeral database)")
    ap.add_argument("--no-write", action="store_true", help="do not update bench/RESULTS.md")
    args = ap.parse_args()
    data = data_dir(args.data)
    docs = corpus(data)
    queries, qrels = judged(data)
    halves = dict(zip(("tuning half", "held-out half"), split(queries)))
    if args.queries:
        halves = {name: qs[: args.queries] for name, qs in halves.items()}
    texts = [d["title"] + "\n" + d["text"] for d in docs]

    store = Substrate(url=args.url) if args.url else Substrate()
    ingest_s, upkeep_s = load_store(store, docs)
    rows = []
    bm25 = PlainBM25(texts)
    for name, qs in halves.items():
        hybrid = run_search(store, qs, qrels)
        weight = ranking.DENSE_WEIGHT
        ranking.DENSE_WEIGHT = 0.0
        try:
            lexical = run_search(store, qs, qrels)
        finally:
            ranking.DENSE_WEIGHT = weight
        nd, rc = [], []
        for q in qs:
            n, r = metrics([docs[i]["_id"] for i in bm25.top(q["text"], 100)], qrels[q["_id"]])
            nd.append(n)
            rc.append(r)
        rows += [
            f"| {name} ({len(qs)}) | plain BM25 baseline (no stemming, k1=0.9 b=0.4) | {statistics.fmean(nd):.4f} "
            f"| {statistics.fmean(rc):.4f} | - |",
            f"| {name} ({len(qs)}) | Substrate.search, lexical only (weight 0) | {lexical['ndcg10']:.4f} "
            f"| {lexical['recall100']:.4f} | {lexical['p50_ms']:.1f} ms |",
            f"| {name} ({len(qs)}) | Substrate.search (BM25 + embedding, weight {weight}) | {hybrid['ndcg10']:.4f} "
            f"| {hybrid['recall100']:.4f} | {hybrid['p50_ms']:.1f} ms |",
        ]
    store.close()

    lines = [
        f"SciFact training claims with judgements ({sum(len(q) for q in halves.values())}) over {len(docs)} "
        "abstracts (one scope), split in two fixed halves by a hash of the claim id: the search knobs were tuned on "
        "the first half only.",
        f"Ingest (put_many) {ingest_s:.1f} s; upkeep (index + embedder fit) {upkeep_s:.1f} s.",
        "",
        "| claims | ranking | nDCG@10 | Recall@100 | search p50 (k=100) |",
        "| --- | --- | --- | --- | --- |",
        *rows,
    ]
    print("\n".join(lines))
    if not args.no_write:
        stamp = datetime.now().strftime("%Y-%m-%d %H:%M")
        write_section(
            "\n".join(
                [
                    "## Retrieval quality (bench/retrieval_quality.py)",
                    "",
                    f"Command: `python -m bench.retrieval_quality --data $SUBSTRATE_SCIFACT` ({stamp})",
                    "",
                    *lines,
                ]
            )
        )


def write_section(body: str, name: str = "bench/retrieval_quality.py") -> None:
    """Replace script ``name``'s marked section of RESULTS.md (or append it), leaving other sections alone."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    old = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else "# Benchmark results\n"
    block = f"{begin}\n{body}\n{end}"
    if begin in old and end in old:
        new = old[: old.index(begin)] + block + old[old.index(end) + len(end) :]
    else:
        new = old.rstrip("\n") + "\n\n" + block + "\n"
    RESULTS.write_text(new, encoding="utf-8")


if __name__ == "__main__":
    main()
