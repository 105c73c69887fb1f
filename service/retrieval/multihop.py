"""Multi-hop retrieval: seed matches, then LINK hops along explicit edges and CONTENT hops by re-querying."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from service.domain.items import SubstrateItem
from service.domain.telemetry import emit
from service.domain.validation import InvalidArgument, require_count, require_finite, require_name
from service.retrieval.packing import packed_context
from service.retrieval.text import item_surface

__all__ = ["HOP_VIAS", "HopChain", "HopStep", "multihop"]

HOP_VIAS: tuple[str, ...] = ("seed", "link", "content")


@dataclass
class HopStep:
    """One item in the chain and how it was reached: depth, ``via`` (seed/link/content), parent and score."""

    item: SubstrateItem
    depth: int
    via: str
    parent_id: str | None
    score: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.item, SubstrateItem):
            raise InvalidArgument(f"HopStep.item must be a SubstrateItem, got {type(self.item).__name__}")
        require_count(self.depth, "HopStep.depth")
        if self.via not in HOP_VIAS:
            raise InvalidArgument(f"HopStep.via must be one of {HOP_VIAS}, got {self.via!r}")
        if self.parent_id is not None:
            require_name(self.parent_id, "HopStep.parent_id")
        self.score = require_finite(self.score, "HopStep.score", minimum=None)


@dataclass
class HopChain:
    """A multi-hop result: the items found, in hop order, and the evidence path to each."""

    query: str
    steps: list[HopStep] = field(default_factory=list)

    @property
    def items(self) -> list[SubstrateItem]:
        """Retrieved items in hop-chain order."""
        return [s.item for s in self.steps]

    def by_depth(self) -> dict[int, list[SubstrateItem]]:
        """Items grouped by hop depth."""
        out: dict[int, list[SubstrateItem]] = {}
        for s in self.steps:
            out.setdefault(s.depth, []).append(s.item)
        return out

    def max_depth(self) -> int:
        """The deepest hop reached (0 for an empty chain)."""
        return max((s.depth for s in self.steps), default=0)

    def path_to(self, item_id: str) -> list[SubstrateItem]:
        """The chain from a seed to ``item_id`` (seed first); ``[]`` when the item is not in the chain."""
        by_id = {s.item.id: s for s in self.steps}
        path: list[SubstrateItem] = []
        seen: set[str] = set()
        cur = by_id.get(item_id)
        while cur is not None and cur.item.id not in seen:  # a hand-built cyclic chain must still terminate
            seen.add(cur.item.id)
            path.append(cur.item)
            cur = by_id.get(cur.parent_id) if cur.parent_id else None
        return path[::-1]

    def provenance(self) -> list[dict[str, Any]]:
        """Per step: ``id``, ``kind``, ``depth``, ``via``, ``parent``, ``score`` (4 d.p.)."""
        return [
            {
                "id": s.item.id,
                "kind": s.item.kind,
                "depth": s.depth,
                "via": s.via,
                "parent": s.parent_id,
                "score": round(s.score, 4),
            }
            for s in self.steps
        ]

    def to_context(self, task: str | None = None, **assemble_kw: Any) -> Any:
        """Pack the chain's own items, in chain order at their step scores, into a ContextPacket (no fresh search)."""
        return packed_context(
            self.query if task is None else task, [(s.item, s.score) for s in self.steps], assemble_kw
        )

    def __len__(self) -> int:
        return len(self.steps)


_WORD = re.compile(r"[^\W_]+")


def _words(text: str) -> set[str]:
    """The query's words as written (lower-cased, English stop words dropped)."""
    # Imported here: scikit-learn takes most of a second to import, which `import service` must not pay.
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return {w for w in _WORD.findall(text.lower()) if w not in ENGLISH_STOP_WORDS}


def _names_a_word(item: SubstrateItem, words: set[str]) -> bool:
    """Whether ``item`` names one of the query's words: the same word, or one of 4+ letters that the other extends
    (refund ~ refunds), as the spec's store matches tokens. A chain starts from what the query names: an item that
    matches only by stem (pricing for price) is left to be reached along an edge, so the evidence path runs from
    the explicit mention through the lineage (doc -> artifact -> trace), not from a near miss."""
    if not words:
        return True
    tokens = set(_WORD.findall(item_surface(item).lower()))
    if not words.isdisjoint(tokens):
        return True
    return any(_extends(w, t) for w in words if len(w) >= 4 for t in tokens if len(t) >= 4)


def _extends(a: str, b: str) -> bool:
    return a.startswith(b) or b.startswith(a)


def multihop(
    substrate: Any,
    query: str,
    *,
    max_hops: int = 2,
    seeds: int = 3,
    branch: int = 2,
    max_items: int = 12,
    min_score: float = 0.0,
    scope: str | None = None,
    telemetry: Any = None,
) -> HopChain:
    """Seeds scoring above ``min_score`` that contain one of the query's words, then up to ``max_hops`` of LINK then
    CONTENT hops, at most ``max_items``."""
    for value, name in ((max_hops, "max_hops"), (seeds, "seeds"), (branch, "branch"), (max_items, "max_items")):
        require_count(value, name)
    min_score = require_finite(min_score, "min_score", minimum=None)
    require_name(query, "query")
    if scope is not None:
        require_name(scope, "scope")

    chain: list[HopStep] = []
    seen: set[str] = set()

    def add(item: SubstrateItem, depth: int, via: str, parent: str | None, score: float) -> HopStep:
        step = HopStep(item, depth, via, parent, score)
        chain.append(step)
        seen.add(item.id)
        return step

    if seeds and max_items:
        words = _words(query)
        for it, sc in substrate.search(query, k=seeds, scope=scope):
            if len(chain) < max_items and it.id not in seen and sc > min_score and _names_a_word(it, words):
                add(it, 0, "seed", None, sc)

    frontier = list(chain)
    for depth in range(1, max_hops + 1):
        if len(chain) >= max_items or not frontier or not branch:
            break
        nxt: list[HopStep] = []
        # Explicit edges for the whole frontier before any fuzzy neighbour, so a content match can
        # never take the slot of a stored link; a link hop carries its parent's relevance.
        for step in frontier:
            added = 0
            for lid in step.item.links:
                if added >= branch or len(chain) >= max_items:
                    break
                if lid in seen:
                    continue
                linked = substrate.get(lid)
                # Scope isolation: an edge never pulls in an item from outside the requested scope.
                if linked is None or (scope is not None and linked.scope != scope):
                    continue
                nxt.append(add(linked, depth, "link", step.item.id, step.score))
                added += 1
        for step in frontier:
            if len(chain) >= max_items or not step.item.text.strip():
                continue
            added = 0
            for it, sc in substrate.search(step.item.text, k=branch + len(seen), scope=scope):
                if added >= branch or len(chain) >= max_items:
                    break
                if it.id in seen or sc <= min_score:
                    continue
                nxt.append(add(it, depth, "content", step.item.id, sc))
                added += 1
        frontier = nxt  # a hop that surfaced nothing new ends the walk

    result = HopChain(query, chain)

    def build() -> tuple[dict[str, Any], str, dict[str, Any]]:
        features = {"action": "multihop", "max_hops": max_hops, "seeds": seeds, "branch": branch}
        outcome = {"n": len(result), "reached_depth": result.max_depth()}
        return features, ",".join(s.item.id for s in result.steps), outcome

    emit(telemetry, "reason", build)
    return result
