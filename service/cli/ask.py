"""``substrate ask``: answer a question from the store with the built-in extractive answerer."""

from __future__ import annotations

import argparse
from typing import Any

from service.cli.common import add_store_options, open_store, print_json
from service.retrieval.grounded import DEFAULT_FLOOR

__all__ = ["register"]


def _ask(args: argparse.Namespace) -> int:
    from service.retrieval.context import ContextBudget
    from service.retrieval.grounded import ask

    store = open_store(args)
    try:
        grounded = ask(
            store,
            args.question,
            budget=ContextBudget(max_chars=args.max_chars, max_items=args.k),
            scope=args.scope,
            min_confidence=args.min_confidence,
        )
        result = grounded.answer
        cited = [{"id": i.id, "kind": i.kind, "scope": i.scope, "text": i.text[:120]} for i in result.evidence]
        if args.json:
            print_json({**grounded.as_dict(), "cited": [] if result.abstained else cited})
            return 0
        if result.abstained:
            print(result.note)
            print(f"confidence: {result.confidence:.2f}")
            return 0
        number = {c["id"]: n for n, c in enumerate(cited, 1)}
        for sentence in grounded.sentences:
            print(f"{sentence.text} [{number[sentence.item_id]}]")
        print(f"confidence: {result.confidence:.2f}")
        for c in cited:
            print(f"  [{number[c['id']]}] {c['kind']}:{c['id']} ({c['scope']}) {c['text']}")
    finally:
        store.close()
    return 0


def register(sub: Any) -> None:
    """Add ``ask``."""
    p = sub.add_parser(
        "ask",
        help="answer a question from the store (extractive), with confidence and citations",
        description="Retrieve evidence for QUESTION and answer with the sentences of that evidence that support "
        "it, each cited to the item it came from; a sentence's support is its item's calibrated search score times "
        "how much of the question's content it holds. Abstains when no sentence reaches --min-confidence.",
    )
    add_store_options(p)
    p.add_argument("question", help="the question to answer")
    p.add_argument("--scope", help="answer only from this scope")
    p.add_argument("--k", type=int, default=5, help="how many evidence items to use (default 5)")
    p.add_argument("--max-chars", type=int, default=2000, help="context budget in characters (default 2000)")
    p.add_argument(
        "--min-confidence",
        type=float,
        default=DEFAULT_FLOOR,
        help=f"abstain unless a cited sentence's support reaches this (default {DEFAULT_FLOOR})",
    )
    p.add_argument("--json", action="store_true", help="print the answer as JSON")
    p.set_defaults(handler=_ask)
