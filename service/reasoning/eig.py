"""Information-gain retrieval: greedily pick the items expected to remove the most entropy from a belief."""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from service.domain.items import MODALITIES, SubstrateItem
from service.domain.validation import InvalidArgument, require_count, require_finite, require_name
from service.reasoning.eig_belief import CategoricalBelief
from service.retrieval.retrieve import Retrieval

__all__ = [
    "CategoricalBelief",
    "EigRetrieval",
    "EvidenceOutcome",
    "EvidenceOutcomes",
    "SkippedCandidate",
    "eig_retrieve",
]

EIG_QUERY = "<information-gain>"
# Gains at floating-point noise level are "no information", not evidence (MXR-080-0250's strict bar).
_GAIN_FLOOR = 1e-12


@dataclass(frozen=True)
class EvidenceOutcome:
    """One possible realization of a candidate's evidence, with its (finite, non-negative) probability."""

    probability: float
    evidence: Any

    def __post_init__(self) -> None:
        object.__setattr__(self, "probability", require_finite(self.probability, "EvidenceOutcome.probability"))


@dataclass(frozen=True)
class EvidenceOutcomes:
    """A candidate's predictive distribution over its evidence: non-empty, probabilities summing to 1 (MXR-080-0250)."""

    outcomes: Sequence[EvidenceOutcome]

    def __post_init__(self) -> None:
        if isinstance(self.outcomes, (str, bytes)) or not hasattr(self.outcomes, "__iter__"):
            raise InvalidArgument("EvidenceOutcomes.outcomes must be a sequence of EvidenceOutcome")
        outs = tuple(self.outcomes)
        if not outs:
            raise InvalidArgument("EvidenceOutcomes needs at least one outcome")
        if not all(isinstance(o, EvidenceOutcome) for o in outs):
            raise InvalidArgument("EvidenceOutcomes.outcomes entries must be EvidenceOutcome")
        total = math.fsum(o.probability for o in outs)
        if not math.isclose(total, 1.0, abs_tol=1e-6):
            raise InvalidArgument(f"EvidenceOutcomes probabilities must sum to 1.0, got {total}")
        object.__setattr__(self, "outcomes", outs)


@dataclass
class SkippedCandidate:
    """A substrate item scoring could not use, and why (MXR-080-0251)."""

    item: SubstrateItem
    reason: str


class EigRetrieval(Retrieval):
    """A Retrieval from ``eig_retrieve`` plus ``skipped`` candidates and an early ``stop_reason`` (None if none)."""

    def __init__(
        self,
        query: str,
        items: list[SubstrateItem] | None = None,
        scores: list[float] | None = None,
        *,
        skipped: list[SkippedCandidate] | None = None,
        stop_reason: str | None = None,
    ) -> None:
        # Construction goes through Retrieval's own validated path (MXR-080-0248), never a second dataclass init.
        super().__init__(query, items, scores)
        self.skipped: list[SkippedCandidate] = list(skipped) if skipped is not None else []
        if not all(isinstance(s, SkippedCandidate) for s in self.skipped):
            raise InvalidArgument("EigRetrieval.skipped entries must be SkippedCandidate")
        if stop_reason is not None and not isinstance(stop_reason, str):
            raise InvalidArgument(f"EigRetrieval.stop_reason must be a str or None, got {stop_reason!r}")
        self.stop_reason = stop_reason


def _clone(belief: Any) -> Any:
    # MXR-080-0251: update() is supposed to return a new belief; cloning first means one that mutates
    # itself anyway can never contaminate the baseline every sibling candidate is scored against. A copy()
    # that hands back the belief itself is no clone: a deep copy is taken instead, and a belief that even a
    # deep copy returns unchanged cannot be scored without risking the caller's own state.
    for attr in ("copy", "clone"):
        fn = getattr(belief, attr, None)
        if callable(fn):
            out = fn()
            if out is not belief:
                return out
            break
    out = copy.deepcopy(belief)
    if out is belief:
        raise InvalidArgument(
            f"belief {type(belief).__name__} cannot be cloned: copy() and deepcopy returned the SAME object, so "
            "scoring a candidate would update the caller's belief"
        )
    return out


def _uniform(seed: Any) -> Callable[[], float]:
    if seed is None or (isinstance(seed, int) and not isinstance(seed, bool)):
        return random.Random(seed).random
    if callable(getattr(seed, "random_sample", None)):  # numpy.random.RandomState
        return lambda: float(seed.random_sample())
    if callable(getattr(seed, "random", None)):  # random.Random, numpy.random.Generator
        return lambda: float(seed.random())
    raise InvalidArgument(f"seed must be None, an int, or a random generator, got {type(seed).__name__}")


def _score(current: Any, baseline: float, raw: Any) -> tuple[float, list[tuple[float, Any]]]:
    """Expected entropy reduction over the candidate's outcomes, and each outcome's (probability, posterior)."""
    outcomes = raw.outcomes if isinstance(raw, EvidenceOutcomes) else (EvidenceOutcome(1.0, raw),)
    posteriors = []
    for o in outcomes:
        if o.probability == 0.0:
            continue
        posteriors.append((o.probability, _clone(current).update(o.evidence)))
    expected = math.fsum(p * float(post.entropy()) for p, post in posteriors)
    return baseline - expected, posteriors


def _realize(posteriors: list[tuple[float, Any]], draw: Callable[[], float]) -> Any:
    if len(posteriors) == 1:
        return posteriors[0][1]
    u = draw() * math.fsum(p for p, _ in posteriors)
    acc = 0.0
    for p, post in posteriors:
        acc += p
        if u < acc:
            return post
    return posteriors[-1][1]


def eig_retrieve(
    substrate: Any,
    belief: Any,
    evidence_fn: Callable[[SubstrateItem], Any],
    *,
    k: int = 8,
    kind: str | None = None,
    scope: str | None = None,
    seed: Any = None,
) -> EigRetrieval:
    """Greedily pick up to ``k`` items by expected posterior-entropy reduction; ``belief`` is never mutated."""
    k = require_count(k, "k")
    if not callable(getattr(belief, "entropy", None)) or not callable(getattr(belief, "update", None)):
        raise InvalidArgument("belief must have entropy() and update(evidence)")
    if not callable(evidence_fn):
        raise InvalidArgument("evidence_fn must be callable")
    if kind is not None and kind not in MODALITIES:
        raise InvalidArgument(f"kind must be one of {MODALITIES} or None, got {kind!r}")
    if scope is not None:
        require_name(scope, "scope")
    draw = _uniform(seed)

    current = _clone(belief)
    remaining: list[SubstrateItem] = list(substrate.all(kind=kind, scope=scope)) if k > 0 else []
    evidence: dict[int, Any] = {}
    chosen: list[SubstrateItem] = []
    gains: list[float] = []
    skipped: list[SkippedCandidate] = []
    stop_reason: str | None = None
    while remaining and len(chosen) < k:
        baseline = float(current.entropy())
        scored: list[tuple[SubstrateItem, float, list[tuple[float, Any]]]] = []
        for item in remaining:
            try:
                if id(item) not in evidence:  # evidence_fn runs once per candidate, not once per round
                    evidence[id(item)] = evidence_fn(item)
                gain, posteriors = _score(current, baseline, evidence[id(item)])
            except ValueError as exc:  # the one declared "no usable evidence" signal; anything else is a bug
                skipped.append(SkippedCandidate(item, str(exc) or type(exc).__name__))
                continue
            if not math.isfinite(gain):
                skipped.append(SkippedCandidate(item, f"non-finite expected gain {gain!r}"))
                continue
            scored.append((item, gain, posteriors))
        if not scored:
            stop_reason = "no_usable_candidates"
            break
        best, best_gain, posteriors = max(scored, key=lambda t: t[1])
        if best_gain <= _GAIN_FLOOR:
            stop_reason = "no_admissible_positive_gain"
            break
        chosen.append(best)
        gains.append(best_gain)
        current = _realize(posteriors, draw)
        remaining = [it for it, _, _ in scored if it is not best]
    return EigRetrieval(EIG_QUERY, chosen, gains, skipped=skipped, stop_reason=stop_reason)
