"""Bytes per document of the search read models, beside a tsvector column with a GIN index over the same documents.

Run: python -m bench.search_footprint --data DIR (or $SUBSTRATE_SCIFACT) [--passages N] [--no-write]

Ingests the SciFact abstracts (or --passages N SciFact-like passages) into one scope, lets the upkeep index them
(one round: the segments merged), VACUUMs, and measures every search read model's table, TOAST and indexes
(pg_total_relation_size). The baseline, in the same database: a table of (id, tsvector of the same search surface)
with a GIN index, the usual PostgreSQL full-text setup. Printed: bytes per document of each, and the ratio. The
embedding caches (a 256-d vector and its HNSW entry per text item) are shown apart: the baseline has no vectors.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import text  # noqa: E402

from bench.retrieval_quality import write_section  # noqa: E402
from bench.scifact import add_data_option, corpus, data_dir, passages  # noqa: E402
from projections.search_index import SEARCH  # noqa: E402
from service import Substrate  # noqa: E402
from service.domain.items import SubstrateItem  # noqa: E402
from service.search.upkeep import upkeep_once  # noqa: E402

SCOPE = "bench"
_SIZE = text("SELECT pg_total_relation_size(CAST(:t AS regclass))")
_BASELINE = (
    "CREATE TABLE fts_baseline AS SELECT id, to_tsvector('english', search_surface(doc)) AS tsv FROM items",
    "CREATE INDEX fts_baseline_gin ON fts_baseline USING gin (tsv)",
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_option(ap)
    ap.add_argument("--passages", type=int, default=0, help="SciFact-like passages instead of the abstracts")
    ap.add_argument("--no-write", action="store_true", help="do not update bench/RESULTS.md")
    args = ap.parse_args()
    data = data_dir(args.data)
    if args.passages:
        docs, what = passages(args.passages, data), f"{args.passages:,} SciFact-like passages"
    else:
        docs = [d["title"] + "\n" + d["text"] for d in corpus(data)]
        what = f"the {len(docs):,} SciFact abstracts"
    store = Substrate()
    store.put_many(SubstrateItem(kind="text", text=t, scope=SCOPE, created_at=1.0) for t in docs)
    t0 = time.perf_counter()
    report = upkeep_once(store.engine, refits=False)
    index_s = time.perf_counter() - t0
    store.reindex()  # the embedder too, for the caches' line
    with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
        for sql in _BASELINE:
            c.execute(text(sql))
        c.execute(text("VACUUM ANALYZE"))
        sizes = {t: int(c.execute(_SIZE, {"t": t}).scalar_one()) for t in SEARCH.tables}
        baseline = int(c.execute(_SIZE, {"t": "fts_baseline"}).scalar_one())
        caches = sum(int(c.execute(_SIZE, {"t": t}).scalar_one()) for t in ("embedder_terms", "item_vectors"))
        caches += int(
            c.execute(
                text(
                    "SELECT coalesce(sum(pg_total_relation_size(i.inhrelid)), 0) FROM pg_inherits i "
                    "WHERE i.inhparent = 'item_vectors'::regclass"
                )
            ).scalar_one()
        )
        postings = int(c.execute(text("SELECT coalesce(sum(n), 0) FROM search_lists")).scalar_one())
    store.close()
    n = len(docs)
    total = sum(sizes.values())
    lines = [
        f"{what} in one scope ({postings:,} postings, {postings / n:.0f} a document); indexed by the upkeep in "
        f"{index_s:.1f} s ({report.merged} segment merges), then VACUUM ANALYZE.",
        "",
        "| relation (table + TOAST + indexes) | bytes per document |",
        "| --- | ---: |",
        *[f"| {t} | {v / n:,.0f} |" for t, v in sizes.items()],
        f"| **search read models, all** | **{total / n:,.0f}** |",
        f"| baseline: tsvector column + GIN index over the same surfaces | {baseline / n:,.0f} |",
        f"| (embedding caches, not in the ratio: 256-d vectors + HNSW + the model's terms) | {caches / n:,.0f} |",
        "",
        f"Ratio search read models / tsvector + GIN: **{total / baseline:.2f}x**.",
    ]
    print("\n".join(lines))
    if not args.no_write:
        stamp = datetime.now().strftime("%Y-%m-%d %H:%M")
        flag = f" --passages {args.passages}" if args.passages else ""
        head = [
            "## Search footprint (bench/search_footprint.py)",
            "",
            f"Command: `python -m bench.search_footprint --data $SUBSTRATE_SCIFACT{flag}` ({stamp})",
            "",
        ]
        write_section("\n".join(head + lines), "bench/search_footprint.py" + flag.replace(" ", ""))


if __name__ == "__main__":
    main()
