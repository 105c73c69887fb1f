"""Cross-kind retrieval: per-kind searches, validated weights, and a diversified or flat merge into aligned hits."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from service.domain.items import MODALITIES, SubstrateItem
from service.domain.telemetry import emit
from service.domain.validation import InvalidArgument, require_count, require_finite, require_name
from service.retrieval.packet import require_bool
from service.retrieval.packing import packed_context

__all__ = ["Retrieval", "RetrievedHit", "retrieve"]


@dataclass(frozen=True)
class RetrievedHit:
    """One retrieved item immutably paired with its finite relevance score (MXR-080-0248)."""

    item: SubstrateItem
    score: float

    def __post_init__(self) -> None:
        if not isinstance(self.item, SubstrateItem):
            raise InvalidArgument(f"RetrievedHit.item must be a SubstrateItem, got {type(self.item).__name__}")
        object.__setattr__(self, "score", require_finite(self.score, "RetrievedHit.score", minimum=None))


@dataclass(init=False)
class Retrieval:
    """Items in merged relevance order, built from aligned validated (item, score) pairs (MXR-080-0248)."""

    query: str
    hits: tuple[RetrievedHit, ...] = ()

    def __init__(self, query: str, items: list[SubstrateItem] | None = None, scores: list[float] | None = None) -> None:
        if not isinstance(query, str):
            raise InvalidArgument(f"Retrieval.query must be a str, got {type(query).__name__}")
        items = list(items) if items is not None else []
        scores = list(scores) if scores is not None else []
        if len(items) != len(scores):
            raise InvalidArgument(f"Retrieval needs equal-length items and scores, got {len(items)} and {len(scores)}")
        self.query = query
        self.hits = tuple(RetrievedHit(it, sc) for it, sc in zip(items, scores, strict=True))

    @property
    def items(self) -> list[SubstrateItem]:
        """Retrieved items in merged relevance order (a read-only view of ``hits``)."""
        return [h.item for h in self.hits]

    @property
    def scores(self) -> list[float]:
        """Scores aligned 1:1 with ``items`` (a read-only view of ``hits``)."""
        return [h.score for h in self.hits]

    def by_kind(self) -> dict[str, list[SubstrateItem]]:
        """Retrieved items grouped by kind, each group in merged order."""
        out: dict[str, list[SubstrateItem]] = {}
        for h in self.hits:
            out.setdefault(h.item.kind, []).append(h.item)
        return out

    def kinds(self) -> list[str]:
        """The sorted kinds present in the result."""
        return sorted(self.by_kind())

    def top(self, n: int) -> list[SubstrateItem]:
        """The first ``n`` items; ``n`` is an exact non-negative int (MXR-080-0236)."""
        return [h.item for h in self.hits[: require_count(n, "n")]]

    def provenance(self) -> list[dict[str, Any]]:
        """Per hit: ``id``, ``kind``, ``source`` (provenance source/path or None), ``score`` (4 d.p.)."""
        return [
            {
                "id": h.item.id,
                "kind": h.item.kind,
                "source": h.item.provenance.get("source") or h.item.provenance.get("path"),
                "score": round(h.score, 4),
            }
            for h in self.hits
        ]

    def to_context(self, task: str | None = None, **assemble_kw: Any) -> Any:
        """Pack THESE hits, in this order at these scores, into a budgeted ContextPacket (MXR-080-0249)."""
        return packed_context(self.query if task is None else task, [(h.item, h.score) for h in self.hits], assemble_kw)

    def __len__(self) -> int:
        return len(self.hits)


def _kinds(kinds: list[str] | None) -> list[str]:
    if kinds is None:
        return list(MODALITIES)  # every kind; a kind with no items simply contributes no hits
    if isinstance(kinds, (str, bytes)):
        raise InvalidArgument("kinds must be a list of kind names, not a single string")
    out: list[str] = []
    for kd in kinds:
        if kd not in MODALITIES:
            raise InvalidArgument(f"unknown kind {kd!r}; kinds must be drawn from {MODALITIES}")
        if kd not in out:
            out.append(kd)
    return out


def _weights(weights: dict[str, float] | None) -> dict[str, float]:
    if weights is None:
        return {}
    if not isinstance(weights, dict):
        raise InvalidArgument(f"weights must be a dict of kind -> weight, got {type(weights).__name__}")
    out = {}
    for kd, w in weights.items():
        if kd not in MODALITIES:
            raise InvalidArgument(f"weights names unknown kind {kd!r}; kinds are {MODALITIES}")
        # MXR-080-0248: a negative weight reverses a kind's order and NaN/inf break the merged sort.
        out[kd] = require_finite(w, f"weights[{kd!r}]", minimum=0.0)
    return out


def retrieve(
    substrate: Any,
    query: str,
    *,
    k: int = 8,
    kinds: list[str] | None = None,
    weights: dict[str, float] | None = None,
    diversify: bool = True,
    scope: str | None = None,
    telemetry: Any = None,
) -> Retrieval:
    """Up to ``k`` hits across kinds; all arguments are validated before any search runs (MXR-080-0236/0248)."""
    k = require_count(k, "k")
    require_name(query, "query")
    present = _kinds(kinds)
    wts = _weights(weights)
    require_bool(diversify, "diversify")
    if scope is not None:
        require_name(scope, "scope")

    per_kind: dict[str, list[tuple[SubstrateItem, float]]] = {}
    if k > 0:
        for kd in present:
            w = wts.get(kd, 1.0)
            hits = [(it, float(sc) * w) for it, sc in substrate.search(query, k=k, kind=kd, scope=scope)]
            for _, sc in hits:
                if not math.isfinite(sc):
                    raise InvalidArgument(f"search returned a non-finite score for kind {kd!r}")
            per_kind[kd] = sorted(hits, key=lambda t: -t[1])

    merged: list[tuple[SubstrateItem, float]] = []
    seen: set[str] = set()
    if diversify:
        # Round-robin over kinds so the result spans modalities; within a round the higher score goes first.
        depth = max((len(v) for v in per_kind.values()), default=0)
        for rank in range(depth):
            layer = [(per_kind[kd][rank], i) for i, kd in enumerate(present) if rank < len(per_kind.get(kd, ()))]
            layer.sort(key=lambda t: (-t[0][1], t[1]))
            for (it, sc), _ in layer:
                if len(merged) < k and it.id not in seen:
                    merged.append((it, sc))
                    seen.add(it.id)
    else:
        flat = sorted((p for kd in present for p in per_kind.get(kd, ())), key=lambda t: -t[1])
        for it, sc in flat:
            if len(merged) < k and it.id not in seen:
                merged.append((it, sc))
                seen.add(it.id)

    result = Retrieval(query, [it for it, _ in merged], [sc for _, sc in merged])

    def build() -> tuple[dict[str, Any], str, dict[str, Any]]:
        features = {"action": "retrieve", "queried_kinds": present, "diversify": diversify, "k": k}
        outcome = {"n": len(result), "kinds_covered": len(result.by_kind())}
        return features, ",".join(i.id for i in result.items), outcome

    emit(telemetry, "reason", build)
    return result
