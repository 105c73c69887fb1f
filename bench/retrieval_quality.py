"""Retrieval quality on SciFact: Substrate.search vs a plain BM25 baseline computed in the same run.

Run: python bench/retrieval_quality.py [--data ../shared/data/scifact] [--queries N] [--no-write]

Ingests corpus.jsonl into one scope through Substrate.put_many (title + abstract as the item text, the doc id in
the payload), runs every training claim that has judgements through Substrate.search(k=100, scope=...), and
prints nDCG@10 and Recall@100 beside: a plain BM25 (numpy/scipy; lowercase word tokens, scikit-learn's English
stopwords, no stemming, k1=0.9 b=0.4), and the same search with the embedding weight set to 0 (lexical only).
Writes (replaces) its own section of bench/RESULTS.md unless --no-write.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from service import Substrate, embedding  # noqa: E402
from service.domain.items import SubstrateItem  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "scifact"
SCOPE = "scifact"


def load(data: Path) -> tuple[list[dict[str, str]], list[dict[str, str]], dict[str, dict[str, int]]]:
    corpus = [json.loads(line) for line in (data / "corpus.jsonl").open(encoding="utf-8")]
    queries = [json.loads(line) for line in (data / "queries-train.jsonl").open(encoding="utf-8")]
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for line in (data / "qrels-train.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        q, doc, score = line.split("\t")
        qrels[q][doc] = int(score)
    return corpus, [q for q in queries if q["_id"] in qrels], qrels


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder with corpus.jsonl, queries, qrels")
    ap.add_argument("--queries", type=int, default=0, help="use only the first N judged claims (0 = all)")
    ap.add_argument("--url", help="PostgreSQL URL (default: a fresh ephemeral database)")
    ap.add_argument("--no-write", action="store_true", help="do not update bench/RESULTS.md")
    args = ap.parse_args()
    corpus, queries, qrels = load(args.data)
    if args.queries:
        queries = queries[: args.queries]
    texts = [d["title"] + "\n" + d["text"] for d in corpus]

    store = Substrate(url=args.url) if args.url else Substrate()
    t0 = time.perf_counter()
    store.put_many(
        SubstrateItem(kind="text", text=t, payload={"doc_id": d["_id"]}, scope=SCOPE, id=f"doc-{d['_id']}")
        for d, t in zip(corpus, texts)
    )
    ingest_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    store.search("warm up", k=1, scope=SCOPE)  # the first search of the domain fits its embedder
    fit_s = time.perf_counter() - t0

    hybrid = run_search(store, queries, qrels)
    weight = embedding.DENSE_WEIGHT
    embedding.DENSE_WEIGHT = 0.0
    try:
        lexical = run_search(store, queries, qrels)
    finally:
        embedding.DENSE_WEIGHT = weight

    bm25 = PlainBM25(texts)
    nd, rc = [], []
    for q in queries:
        n, r = metrics([corpus[i]["_id"] for i in bm25.top(q["text"], 100)], qrels[q["_id"]])
        nd.append(n)
        rc.append(r)
    plain = {"ndcg10": statistics.fmean(nd), "recall100": statistics.fmean(rc)}
    store.close()

    lines = [
        f"SciFact train claims: {len(queries)} judged claims over {len(corpus)} abstracts (one scope).",
        f"Ingest (put_many) {ingest_s:.1f} s; first search incl. embedder fit {fit_s:.1f} s.",
        "",
        "| ranking | nDCG@10 | Recall@100 | search p50 |",
        "| --- | --- | --- | --- |",
        f"| plain BM25 baseline (no stemming, k1=0.9 b=0.4) | {plain['ndcg10']:.4f} | {plain['recall100']:.4f} | - |",
        f"| Substrate.search, lexical only (weight 0) | {lexical['ndcg10']:.4f} | {lexical['recall100']:.4f} "
        f"| {lexical['p50_ms']:.1f} ms |",
        f"| Substrate.search (BM25 + embedding, weight {weight}) | {hybrid['ndcg10']:.4f} | {hybrid['recall100']:.4f} "
        f"| {hybrid['p50_ms']:.1f} ms |",
    ]
    print("\n".join(lines))
    if not args.no_write:
        write_section(
            "\n".join(
                [
                    "## Retrieval quality (bench/retrieval_quality.py)",
                    "",
                    "Command: `python bench/retrieval_quality.py`",
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
