"""``substrate ask``: answer a question from the store with the built-in extractive answerer."""

from __future__ import annotations

import argparse
from typing import Any

from service.cli.common import add_store_options, open_store, print_json

__all__ = ["register"]


def _ask(args: argparse.Namespace) -> int:
    from service.retrieval.answer import answer_from_substrate
    from service.retrieval.context import ContextBudget
    from service.retrieval.extractive import extractive_answerer

    store = open_store(args)
    try:
        result = answer_from_substrate(
            store,
            args.question,
            extractive_answerer,
            budget=ContextBudget(max_chars=args.max_chars, max_items=args.k),
            scope=args.scope,
            min_confidence=args.min_confidence,
        )
        cited = [{"id": i.id, "kind": i.kind, "scope": i.scope, "text": i.text[:120]} for i in result.evidence]
        if args.json:
            print_json({**result.as_dict(), "cited": cited})
            return 0
        if result.abstained or not result.answer:
            print(f"abstained: {result.note or 'not enough evidence in the store'}")
        else:
            print(result.answer)
        print(f"confidence: {result.confidence:.2f}")
        for c in cited:
            print(f"  [{c['kind']}:{c['id']}] ({c['scope']}) {c['text']}")
    finally:
        store.close()
    return 0


def register(sub: Any) -> None:
    """Add ``ask``."""
    p = sub.add_parser(
        "ask",
        help="answer a question from the store (extractive), with confidence and citations",
        description="Retrieve evidence for QUESTION, answer with the best-supported sentences of that evidence, "
        "or abstain when the evidence is too weak; prints the confidence and the cited items.",
    )
    add_store_options(p)
    p.add_argument("question", help="the question to answer")
    p.add_argument("--scope", help="answer only from this scope")
    p.add_argument("--k", type=int, default=5, help="how many evidence items to use (default 5)")
    p.add_argument("--max-chars", type=int, default=2000, help="context budget in characters (default 2000)")
    p.add_argument("--min-confidence", type=float, default=0.1, help="abstain below this confidence (default 0.1)")
    p.add_argument("--json", action="store_true", help="print the answer as JSON")
    p.set_defaults(handler=_ask)
