"""Search commands: ``substrate search`` and ``substrate reindex`` (thin wrappers over Substrate)."""

from __future__ import annotations

import argparse
from typing import Any

from service.cli.common import add_as_of_option, add_store_options, open_store, print_json
from service.domain.items import MODALITIES

__all__ = ["register"]


def _count(value: str) -> int:
    try:
        k = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--k must be a non-negative integer, got {value!r}") from None
    if k < 0:
        raise argparse.ArgumentTypeError(f"--k must be a non-negative integer, got {value!r}")
    return k


def _preview(text: str, width: int = 72) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _search(args: argparse.Namespace) -> int:
    store = open_store(args)
    try:
        reading = store if args.as_of is None else store.as_of(args.as_of)
        hits = reading.search(args.query, k=args.k, kind=args.kind, scope=args.scope)
        reading.close()
    finally:
        store.close()
    if args.json:
        print_json([{"score": score, "item": item.to_json()} for item, score in hits])
        return 0
    if not hits:
        print("no matches")
        return 0
    for rank, (item, score) in enumerate(hits, 1):
        surface = item.text or " ".join([*item.tags, str(item.payload) if item.payload else ""])
        print(f"{rank:>3}. {score:.4f}  {item.id}  [{item.kind} @ {item.scope}]  {_preview(surface)}")
    return 0


def _reindex(args: argparse.Namespace) -> int:
    from service.search.ranking import embedder_status
    from service.search.upkeep import reindex

    store = open_store(args)
    try:
        refitted = reindex(store.engine)
        status = embedder_status(store.engine)
    finally:
        store.close()
    if args.json:
        print_json({"refitted": refitted, "domains": status})
        return 0
    print(f"refitted {len(refitted)} domain(s)" + (f": {', '.join(refitted)}" if refitted else " (all fresh)"))
    for row in status:
        print(_status_line(row))
    return 0


def _status_line(row: dict[str, Any]) -> str:
    shape = f"{row['dim']}-d, {row['vectors']} vectors, {row['vocabulary']} terms" if row["dim"] else "lexical only"
    return f"  {row['domain']:<20} {row['items']:>8} items ({row['text_items']} text)  {row['mode']}: {shape}"


def register(sub: Any) -> None:
    """Add ``search`` and ``reindex``."""
    p = sub.add_parser(
        "search",
        help="rank stored items for a query",
        description="Rank stored items for QUERY within one scope (or all scopes): text items by BM25 fused with "
        "the scope's learned embedding, structured items lexically over payload and tags. Scores are in [0, 1].",
    )
    p.add_argument("query", help="the query text (stemmed, stopwords ignored; a query without words matches nothing)")
    p.add_argument("--k", type=_count, default=5, help="how many results at most (default 5)")
    p.add_argument("--kind", choices=MODALITIES, help="only items of this kind")
    p.add_argument("--scope", help="rank within this scope only, with its own statistics (default: every scope)")
    p.add_argument("--json", action="store_true", help="print [{score, item}] as JSON")
    add_as_of_option(p)
    add_store_options(p)
    p.set_defaults(handler=_search)

    r = sub.add_parser(
        "reindex",
        help="refit stale search embedders now",
        description="Refit the embedder of every domain (each scope, and * for all scopes) whose text changed since "
        "its last fit; searches do this lazily, this does it up front. Prints each domain's embedder.",
    )
    r.add_argument("--json", action="store_true", help="print {refitted, domains} as JSON")
    add_store_options(r)
    r.set_defaults(handler=_reindex)
