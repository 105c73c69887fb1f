"""check_factuality: split an answer into claims and ground each against the substrate, per claim.

Every claim comes back SUPPORTED, CONTRADICTED or neither, with the citing items either way. An answer
with no extractable claims is UNKNOWN (``grounded_fraction is None``), never vacuously grounded.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from service.beliefs.corroborate import Corroboration, default_corroborates, sentence_claims, to_corroboration
from service.domain.validation import InvalidArgument, require_count, require_finite

__all__ = ["ClaimVerdict", "Corroboration", "FactualityReceipt", "check_factuality", "sentence_claims"]


@dataclass(frozen=True)
class ClaimVerdict:
    """One claim with the evidence for (``citations``) and against (``contradictions``) it; both may be set."""

    claim: str
    supported: bool
    score: float
    citations: list[dict[str, Any]] = field(default_factory=list)
    contradicted: bool = False
    contradictions: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        # A receipt is a record: detach from the caller's containers so later mutation cannot rewrite it.
        object.__setattr__(self, "citations", copy.deepcopy(list(self.citations)))
        object.__setattr__(self, "contradictions", copy.deepcopy(list(self.contradictions)))


@dataclass(frozen=True)
class FactualityReceipt:
    """A per-claim grounding of an answer against the substrate: the receipt behind "is this true?"."""

    answer: str
    verdicts: list[ClaimVerdict] = field(default_factory=list)

    def __post_init__(self) -> None:
        object.__setattr__(self, "verdicts", list(self.verdicts))

    @property
    def grounded_fraction(self) -> float | None:
        """Share of claims supported by substrate evidence; None when there were no claims to check."""
        if not self.verdicts:
            return None
        return sum(v.supported for v in self.verdicts) / len(self.verdicts)

    def unsupported(self) -> list[ClaimVerdict]:
        """The claims the substrate could not corroborate: what to flag or retract."""
        return [v for v in self.verdicts if not v.supported]

    def contradicted(self) -> list[ClaimVerdict]:
        """The claims some retrieved evidence actively disagreed with."""
        return [v for v in self.verdicts if v.contradicted]

    def is_grounded(self, threshold: float = 1.0) -> bool:
        """True iff the grounded fraction meets ``threshold``; always False when there were no claims."""
        threshold = require_finite(threshold, "threshold")
        fraction = self.grounded_fraction
        return fraction is not None and fraction >= threshold

    def as_dict(self) -> dict[str, Any]:
        """A JSON-serializable receipt (``grounded_fraction`` is null when unknown)."""
        fraction = self.grounded_fraction
        return {
            "answer": self.answer,
            "grounded_fraction": None if fraction is None else round(fraction, 4),
            "n_claims": len(self.verdicts),
            "n_unsupported": len(self.unsupported()),
            "n_contradicted": len(self.contradicted()),
            "claims": [
                {
                    "claim": v.claim,
                    "supported": v.supported,
                    "contradicted": v.contradicted,
                    "score": round(v.score, 4),
                    "citations": copy.deepcopy(v.citations),
                    "contradictions": copy.deepcopy(v.contradictions),
                }
                for v in self.verdicts
            ],
        }


def _claims(extract: Callable[[str], list[str]], answer: str) -> list[str]:
    found = extract(answer)
    if found is None:
        return []
    if isinstance(found, str):
        raise InvalidArgument("extract must return a list of claims, not a single string")
    return [str(c).strip() for c in found if c is not None and str(c).strip()]


def _search(substrate: Any, query: str, k: int, scope: str | None) -> list[tuple[Any, float]]:
    if k == 0:
        return []
    # scope is passed only when set, so any object with the search surface works.
    return list(substrate.search(query, k=k) if scope is None else substrate.search(query, k=k, scope=scope))


def _verdict(
    substrate: Any, claim: str, corroborates: Callable[[str, str], Any], min_score: float, k: int, scope: str | None
) -> ClaimVerdict:
    hits = [(item, float(sc)) for item, sc in _search(substrate, claim, k, scope)]
    finite = [sc for _, sc in hits if math.isfinite(sc)]
    citations: list[dict[str, Any]] = []
    contradictions: list[dict[str, Any]] = []
    for item, score in hits:
        # Below the floor is embedder noise, not evidence; NaN is never evidence.
        if not score >= min_score or not (item.text or "").strip():
            continue
        verdict = to_corroboration(corroborates(item.text, claim))
        entry = {"id": item.id, "kind": item.kind, "scope": item.scope, "score": round(score, 4)}
        if verdict is Corroboration.SUPPORTED:
            citations.append(entry)
        elif verdict is Corroboration.CONTRADICTED:
            contradictions.append(entry)
    return ClaimVerdict(
        claim=claim,
        supported=bool(citations),
        score=max(finite, default=0.0),
        citations=citations,
        contradicted=bool(contradictions),
        contradictions=contradictions,
    )


def check_factuality(
    substrate: Any,
    answer: str,
    *,
    extract: Callable[[str], list[str]] | None = None,
    corroborates: Callable[[str, str], Corroboration | bool] | None = None,
    min_score: float = 0.2,
    k: int = 4,
    scope: str | None = None,
) -> FactualityReceipt:
    """Ground each claim of ``answer`` (``extract``, default ``sentence_claims``) against the top ``k`` items.

    Evidence scoring below ``min_score`` does not count; ``corroborates(evidence, claim)`` classifies the
    rest (default: negation-aware lexical check; a bool is accepted, True -> SUPPORTED, False -> UNVERIFIED).
    """
    if answer is None:
        answer = ""
    if not isinstance(answer, str):
        raise InvalidArgument(f"answer must be a string, got {answer!r}")
    k = require_count(k, "k")
    min_score = require_finite(min_score, "min_score", minimum=None)
    corr = corroborates or default_corroborates
    verdicts = [_verdict(substrate, c, corr, min_score, k, scope) for c in _claims(extract or sentence_claims, answer)]
    return FactualityReceipt(answer=answer, verdicts=verdicts)
