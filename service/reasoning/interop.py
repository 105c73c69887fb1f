"""External model interop: answers carry semantic-entropy uncertainty and a three-state Confidence verdict.

``ExternalModel`` samples an external ``generate`` callable several times per prompt, clusters the draws
by meaning and measures the entropy of that clustering. The returned answer is the first draw of the
same batch (MXR-080-0270). Without a calibration policy (calibration prompts yielding a finite (1-alpha)
entropy quantile, or an explicit ``max_entropy``) every verdict is UNCALIBRATED: it fails closed, never confident.
``external_action`` adapts it to a reasoner action that contributes evidence only when CONFIDENT.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from service.domain.validation import InvalidArgument, require_count, require_finite
from service.reasoning.act import Action

__all__ = ["Confidence", "ExternalAnswer", "ExternalModel", "external_action"]


class Confidence(StrEnum):
    """An external answer's verdict: within the calibrated cutoff, beyond it, or no cutoff exists at all."""

    CONFIDENT = "confident"
    UNCERTAIN = "uncertain"
    UNCALIBRATED = "uncalibrated"


@dataclass(frozen=True)
class ExternalAnswer:
    """An external model's answer (one of the measured draws) plus its semantic entropy and verdict."""

    prompt: Any
    answer: Any
    entropy: float
    state: Confidence

    def __post_init__(self) -> None:
        object.__setattr__(self, "state", Confidence(self.state))
        object.__setattr__(self, "entropy", require_finite(self.entropy, "entropy"))

    @property
    def confident(self) -> bool:
        """True iff ``state`` is CONFIDENT (UNCERTAIN and UNCALIBRATED both read False)."""
        return self.state is Confidence.CONFIDENT

    @property
    def calibrated(self) -> bool:
        """True unless ``state`` is UNCALIBRATED."""
        return self.state is not Confidence.UNCALIBRATED


def _exact(a: Any, b: Any) -> bool:
    return bool(a == b)


def _semantic_entropy(draws: list[Any], equivalent: Callable[[Any, Any], bool] | None = None) -> float:
    """Entropy (nats) of the meaning clusters of ``draws``; a draw joins the first cluster it is equivalent to."""
    same = equivalent or _exact
    clusters: list[list[Any]] = []
    for draw in draws:
        for cluster in clusters:
            if same(cluster[0], draw):
                cluster.append(draw)
                break
        else:
            clusters.append([draw])
    n = len(draws)
    if n == 0:
        return 0.0
    entropy = -sum((len(c) / n) * math.log(len(c) / n) for c in clusters)
    return entropy if entropy > 0.0 else 0.0  # -0.0 and rounding noise are not negative uncertainty


def _entropy_quantile(scores: list[float], alpha: float) -> float | None:
    """The (1-alpha) quantile of the calibration entropies (linear interpolation, numpy's default), or None when no
    prompt gave a finite entropy: no calibration policy then."""
    finite = [s for s in scores if math.isfinite(s)]
    return float(np.quantile(finite, 1.0 - alpha)) if finite else None


class ExternalModel:
    """An external ``generate`` callable wrapped so each answer carries semantic-entropy UQ."""

    def __init__(
        self,
        generate: Callable[[Any], Any],
        *,
        calibration_prompts: Any = None,
        equivalent: Callable[[Any, Any], bool] | None = None,
        max_entropy: float | None = None,
        alpha: float = 0.1,
        samples: int = 8,
    ) -> None:
        if not callable(generate):
            raise InvalidArgument(f"generate must be callable, got {generate!r}")
        if equivalent is not None and not callable(equivalent):
            raise InvalidArgument(f"equivalent must be callable or None, got {equivalent!r}")
        self.generate = generate
        self.equivalent = equivalent
        self.alpha = require_finite(alpha, "alpha")
        if not 0.0 < self.alpha < 1.0:
            raise InvalidArgument(f"alpha must be in (0, 1), got {alpha!r}")
        # One draw is allowed (it measures zero entropy, the caller's choice); zero leaves no answer to return.
        self.samples = require_count(samples, "samples")
        if self.samples < 1:
            raise InvalidArgument(f"samples must be at least 1 (the answer is the first draw), got {samples!r}")
        self._explicit = None if max_entropy is None else require_finite(max_entropy, "max_entropy")
        self._calibrated = self._calibrate(calibration_prompts) if self._explicit is None else None

    def _calibrate(self, prompts: Any) -> float | None:
        if prompts is None:
            return None
        if isinstance(prompts, (str, bytes)):
            raise InvalidArgument("calibration_prompts must be a collection of prompts, not a single string")
        scores = [self._measure(p)[1] for p in list(prompts)]
        return _entropy_quantile(scores, self.alpha)

    def _measure(self, prompt: Any) -> tuple[list[Any], float]:
        draws = [self.generate(prompt) for _ in range(self.samples)]
        return draws, _semantic_entropy(draws, self.equivalent)

    @property
    def max_entropy(self) -> float | None:
        """The entropy cutoff for CONFIDENT, or None when no calibration policy exists (callers fail closed)."""
        cutoff = self._explicit if self._explicit is not None else self._calibrated
        return cutoff if cutoff is not None and math.isfinite(cutoff) else None

    def answer(self, prompt: Any) -> ExternalAnswer:
        """Sample one batch; return its first draw with the batch's entropy and verdict (MXR-080-0270)."""
        draws, entropy = self._measure(prompt)
        cutoff = self.max_entropy
        if cutoff is None:
            state = Confidence.UNCALIBRATED
        elif entropy <= cutoff:
            state = Confidence.CONFIDENT
        else:
            state = Confidence.UNCERTAIN
        return ExternalAnswer(prompt=prompt, answer=draws[0], entropy=entropy, state=state)

    def confident(self, prompt: Any) -> bool:
        """Whether the model is calibrated-confident on ``prompt``; False (without sampling) when uncalibrated."""
        return self.max_entropy is not None and self.answer(prompt).confident


def external_action(
    model: ExternalModel,
    *,
    name: str = "external",
    cost: float = 8.0,
    description: str = "",
    trust_uncertain: bool = False,
) -> Any:
    """A DELEGATE action over ``model``: evidence only when CONFIDENT unless ``trust_uncertain``; tagged with its verdict."""
    if not callable(getattr(model, "answer", None)):
        raise InvalidArgument(f"model must have answer(prompt), got {model!r}")

    def _run(question: str) -> list[str]:
        result = model.answer(question)
        if not result.confident and not trust_uncertain:
            return []  # "we cannot vouch for this" is no evidence, whether uncertain or never calibrated
        return [f"external[{result.state.value}, entropy={result.entropy:.3f}] => {result.answer}"]

    return Action(name=name, kind="delegate", run=_run, cost=cost, description=description)
