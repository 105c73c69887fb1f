"""CategoricalBelief: an immutable distribution over a finite hypothesis set, the reference belief state."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from typing import Any

from service.domain.validation import InvalidArgument, require_count

__all__ = ["CategoricalBelief"]

_TOL = 1e-6


def _reals(values: Any, name: str) -> list[float]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise InvalidArgument(f"{name} must be a sequence of numbers, got {type(values).__name__}")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise InvalidArgument(f"{name} entries must be real numbers, got {v!r}")
        out.append(float(v))
    return out


class CategoricalBelief:
    """A probability vector over hypotheses (optionally labelled); ``update`` returns a new posterior, never mutates."""

    __slots__ = ("_labels", "_probs")

    def __init__(self, probs: Sequence[float], labels: Sequence[Any] | None = None) -> None:
        p = _reals(probs, "probs")
        if not p:
            raise InvalidArgument("CategoricalBelief needs at least one hypothesis")
        if any(not math.isfinite(x) or x < 0.0 for x in p):
            raise InvalidArgument(f"CategoricalBelief probabilities must be finite and non-negative, got {p}")
        total = math.fsum(p)
        if not math.isclose(total, 1.0, abs_tol=_TOL):
            raise InvalidArgument(f"CategoricalBelief probabilities must sum to 1.0, got {total}")
        self._probs = tuple(x / total for x in p)
        if labels is None:
            self._labels = None
        else:
            if isinstance(labels, (str, bytes)):
                raise InvalidArgument("labels must be a sequence of labels, not a single string")
            lab = tuple(labels)
            if len(lab) != len(p) or len(set(lab)) != len(lab):
                raise InvalidArgument(f"labels must be {len(p)} distinct values, got {lab!r}")
            self._labels = lab

    @classmethod
    def uniform(cls, k_or_labels: int | Sequence[Any]) -> CategoricalBelief:
        """The uniform belief over ``k`` hypotheses, or over the given labels."""
        if isinstance(k_or_labels, bool) or isinstance(k_or_labels, (str, bytes)):
            raise InvalidArgument(f"uniform takes a positive int or a sequence of labels, got {k_or_labels!r}")
        if isinstance(k_or_labels, numbers.Integral):
            k = require_count(int(k_or_labels), "k")
            if k < 1:
                raise InvalidArgument("uniform needs at least one hypothesis")
            return cls([1.0 / k] * k)
        if not isinstance(k_or_labels, Iterable):
            raise InvalidArgument(f"uniform takes a positive int or a sequence of labels, got {k_or_labels!r}")
        labels = list(k_or_labels)
        if not labels:
            raise InvalidArgument("uniform needs at least one label")
        return cls([1.0 / len(labels)] * len(labels), labels)

    @property
    def probs(self) -> tuple[float, ...]:
        """The normalized probabilities."""
        return self._probs

    @property
    def labels(self) -> tuple[Any, ...] | None:
        """The hypothesis labels, or None when unlabelled."""
        return self._labels

    def entropy(self) -> float:
        """Shannon entropy in nats."""
        return -math.fsum(p * math.log(p) for p in self._probs if p > 0.0)

    def update(self, log_lik: Sequence[float]) -> CategoricalBelief:
        """The normalized posterior under per-hypothesis log-likelihoods; incompatible evidence raises ValueError."""
        ll = _reals(log_lik, "log_lik")
        if len(ll) != len(self._probs):
            raise InvalidArgument(f"log_lik has {len(ll)} entries for {len(self._probs)} hypotheses")
        # -inf is a legitimate "rules this hypothesis out"; +inf and NaN are not likelihoods.
        if any(math.isnan(x) or x == math.inf for x in ll):
            raise InvalidArgument(f"log_lik entries must be finite or -inf, got {ll}")
        support = [x for x, p in zip(ll, self._probs, strict=True) if p > 0.0 and x > -math.inf]
        if not support:
            raise InvalidArgument("evidence rules out every hypothesis the belief gives mass to")
        top = max(support)
        weights = [
            p * math.exp(x - top) if p > 0.0 and x > -math.inf else 0.0 for x, p in zip(ll, self._probs, strict=True)
        ]
        total = math.fsum(weights)
        return CategoricalBelief([w / total for w in weights], self._labels)

    def map(self) -> Any:
        """The most probable hypothesis: its label, or its index when unlabelled (first wins ties)."""
        i = max(range(len(self._probs)), key=lambda j: (self._probs[j], -j))
        return i if self._labels is None else self._labels[i]

    def copy(self) -> CategoricalBelief:
        """An equal, independent belief."""
        return CategoricalBelief(self._probs, self._labels)

    def __len__(self) -> int:
        return len(self._probs)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CategoricalBelief):
            return NotImplemented
        return self._probs == other._probs and self._labels == other._labels

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"CategoricalBelief(probs={list(self._probs)!r}, labels={self._labels!r})"
