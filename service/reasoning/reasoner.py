"""Reasoner: a knowledge store, skills and actions behind one ``ask`` method over ``investigate()``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from service.domain.validation import InvalidArgument, require_finite
from service.reasoning.act import Action, Investigation, compute_action, investigate, retrieve_action

__all__ = ["Reasoner"]


def _skills_of(skills: Any) -> list[Any]:
    if skills is None:
        return []
    all_ = getattr(skills, "all", None)
    found = all_() if callable(all_) else skills
    if callable(found) and not isinstance(found, (list, tuple)):
        raise InvalidArgument("skills must be a list of skills or an object with .all(), not a single skill")
    return list(found)


class Reasoner:
    """A configured reasoner: a knowledge store + skills + actions, asked questions through one method."""

    def __init__(
        self,
        answerer: Callable[[str, str], str],
        *,
        substrate: Any = None,
        skills: Any = None,
        actions: list[Action] | None = None,
        budget_cost: float | None = None,
        min_confidence: float = 0.15,
        retrieve_min_score: float = 0.0,
        scorer: Callable[[Action, str], float] | None = None,
        telemetry: Any = None,
    ) -> None:
        if not callable(answerer):
            raise InvalidArgument(f"answerer must be callable, got {answerer!r}")
        if scorer is not None and not callable(scorer):
            raise InvalidArgument(f"scorer must be callable or None, got {scorer!r}")
        self.answerer = answerer
        self.substrate = substrate
        self.budget_cost = None if budget_cost is None else require_finite(budget_cost, "budget_cost")
        self.min_confidence = require_finite(min_confidence, "min_confidence")
        self.scorer = scorer
        self.telemetry = telemetry
        self._actions: list[Action] = []
        if substrate is not None:
            self._actions.append(retrieve_action(substrate, min_score=retrieve_min_score))
        for skill in _skills_of(skills):
            self._actions.append(compute_action(skill))
        for action in actions or ():
            self.add_action(action)

    @property
    def actions(self) -> list[Action]:
        """A copy of the current action space (retrieve + one compute per skill + attached actions)."""
        return list(self._actions)

    def add_action(self, action: Action) -> Reasoner:
        """Attach an extra action (a simulator, creator or delegate); returns self for chaining."""
        if not isinstance(action, Action):
            raise InvalidArgument(f"add_action expects an Action, got {action!r}")
        self._actions.append(action)
        return self

    def use_policy(self, scorer: Callable[[Action, str], float]) -> Reasoner:
        """Route by a learned acquisition policy instead of the lexical prior; returns self."""
        if not callable(scorer):
            raise InvalidArgument(f"scorer must be callable, got {scorer!r}")
        self.scorer = scorer
        return self

    def ask(
        self,
        question: str,
        *,
        verify: bool = False,
        actions: list[Action] | tuple[Action, ...] | None = None,
        **overrides: Any,
    ) -> Investigation:
        """Investigate ``question`` over this call's action space (``actions`` or the reasoner's own), or abstain.

        ``overrides`` pass through to ``investigate``. With ``verify=True`` and a substrate, a
        non-abstained answer gets a ``check_factuality`` receipt on ``Investigation.factuality``.
        """
        # Snapshot, so an add_action() during this call cannot change the space this call ranks.
        space = list(actions) if actions is not None else list(self._actions)
        options: dict[str, Any] = {
            "budget_cost": self.budget_cost,
            "min_confidence": self.min_confidence,
            "scorer": self.scorer,
            "telemetry": self.telemetry,
        }
        options.update(overrides)
        inv = investigate(question, space, self.answerer, **options)
        if verify and not inv.abstained and inv.answer is not None and self.substrate is not None:
            from service.reasoning.factuality import check_factuality

            inv.factuality = check_factuality(self.substrate, inv.answer)
        return inv
