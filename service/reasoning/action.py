"""Action and Step: one evidence-acquiring move, how it is scored, and the record of firing it."""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from service.domain.validation import InvalidArgument, require_finite

__all__ = ["Action", "Step", "action_features", "relevance_of", "score_action"]

_WORD = re.compile(r"[a-z0-9]+")
# Function words would otherwise manufacture overlap between any action and any question.
_STOP = frozenset(
    "a about an and are as at be by can could do does for from has have how i in is it me of on or should "
    "the to was were what when where which who why will with would you your this that".split()
)


def content_tokens(text: str) -> set[str]:
    """Lower-cased content words of ``text`` (function words dropped); shared by lexical matchers."""
    return {t for t in _WORD.findall(str(text).lower()) if t not in _STOP}


def signature_of(fn: Callable[..., Any]) -> inspect.Signature | None:
    """``fn``'s call signature, or None when Python cannot determine one (some builtins and C callables)."""
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def binds(signature: inspect.Signature, *args: Any) -> bool:
    """Whether a call with ``args`` fits ``signature``: picks a call form without calling (and so never retries)."""
    try:
        signature.bind(*args)
    except TypeError:
        return False
    return True


def call_earned_relevance(fn: Callable[..., Any], question: str, fragments: Any) -> Any:
    """Call an ``earned_relevance`` hook in its declared form: ``fn()`` if it takes no arguments, else two.

    The form is read from the signature once, so a TypeError raised inside the hook is never retried.
    """
    signature = signature_of(fn)
    if signature is not None and binds(signature) and not binds(signature, question, fragments):
        return fn()
    return fn(question, fragments)


def _overlap(action: Action, question: str) -> float:
    q = content_tokens(question)
    return len(q & content_tokens(action.description)) / len(q) if q else 0.0


@dataclass
class Action:
    """One evidence-acquiring move: run it on a question, get back evidence fragments, at a cost.

    ``earned_relevance`` (optional; ``(question, fragments) -> float`` or ``() -> float``) reports how much
    confidence the fragments ``run`` returned earn; without it a fired step falls back to ``relevance_of``.
    Mutable, so ``investigate`` re-validates every cost before ranking (MXR-080-0254).
    """

    name: str
    kind: str
    run: Callable[[str], list[str]]
    cost: float = 1.0
    description: str = ""
    base_score: float = 0.0
    earned_relevance: Callable[..., float] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise InvalidArgument(f"Action.name must be a non-empty string, got {self.name!r}")
        if not isinstance(self.kind, str) or not self.kind.strip():
            raise InvalidArgument(f"Action.kind must be a non-empty string, got {self.kind!r}")
        if not callable(self.run):
            raise InvalidArgument(f"Action.run must be callable, got {self.run!r}")
        if self.earned_relevance is not None and not callable(self.earned_relevance):
            raise InvalidArgument(f"Action.earned_relevance must be callable or None, got {self.earned_relevance!r}")
        if not isinstance(self.description, str):
            raise InvalidArgument(f"Action.description must be a string, got {self.description!r}")
        self.cost = require_finite(self.cost, f"Action {self.name!r} cost")
        self.base_score = require_finite(self.base_score, f"Action {self.name!r} base_score")


@dataclass(frozen=True)
class Step:
    """A fired action and what it yielded: the audit trail behind an investigated answer."""

    action: str
    kind: str
    fragments: list[str]
    cost: float
    score: float
    relevance: float = 0.0
    failed: bool = False
    error: str = ""

    def __post_init__(self) -> None:
        # A step is a record: detach it from the caller's list so later mutation cannot rewrite it.
        object.__setattr__(self, "fragments", [str(f) for f in self.fragments])


def relevance_of(action: Action, question: str) -> float:
    """Prospective on-topic-ness of ``action`` for ``question``: its base floor plus lexical overlap."""
    return action.base_score + _overlap(action, question)


def score_action(action: Action, question: str) -> float:
    """EIG-per-cost proxy: ``relevance_of / cost``; a free action scores +inf if on-topic, else 0.0."""
    cost = require_finite(action.cost, f"Action {action.name!r} cost")
    relevance = relevance_of(action, question)
    if cost == 0.0:
        return math.inf if relevance > 0.0 else 0.0
    return relevance / cost


def action_features(action: Action, question: str) -> dict[str, Any]:
    """The features a learned acquisition policy keys on: the action's kind, cost and query overlap."""
    return {"kind": action.kind, "cost": float(action.cost), "overlap": round(_overlap(action, question), 4)}
