"""Action-based investigation: fire evidence-acquiring actions by EIG-per-cost under a budget, answer or abstain.

``investigate()`` scores every action once, fires them highest-first, accumulates evidence fragments and
returns an ``Investigation``: an answer (or an abstention) plus the ordered trace of what was fired.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from service.domain.telemetry import emit
from service.domain.validation import InvalidArgument, require_count, require_finite
from service.reasoning.action import Action, Step, action_features, call_earned_relevance, relevance_of, score_action
from service.reasoning.action_builders import (
    compute_action,
    create_action,
    delegate_action,
    retrieve_action,
    simulate_action,
)

__all__ = [
    "Action",
    "Investigation",
    "Step",
    "action_features",
    "compute_action",
    "create_action",
    "delegate_action",
    "investigate",
    "relevance_of",
    "retrieve_action",
    "score_action",
    "simulate_action",
]


def _json_float(value: float) -> float | None:
    # A free on-topic action scores +inf; strict JSON has no infinity, so it serializes as null.
    return round(value, 4) if math.isfinite(value) else None


@dataclass
class Investigation:
    """A cited answer (or abstention) plus the sequence of actions that acquired its evidence."""

    question: str
    answer: str | None
    abstained: bool
    confidence: float
    steps: list[Step] = field(default_factory=list)
    note: str = ""
    factuality: Any = None
    proposal: Any = None
    failed: bool = False
    error: str = ""

    @property
    def evidence(self) -> list[str]:
        """All evidence fragments, in the order the actions yielded them."""
        return [f for s in self.steps for f in s.fragments]

    @property
    def spent(self) -> float:
        """Total cost of the actions fired."""
        return float(sum(s.cost for s in self.steps))

    def trace(self) -> list[dict[str, Any]]:
        """The fired actions in order; ``failed``/``error`` tell "found nothing" from "raised" (MXR-080-0256)."""
        return [
            {
                "action": s.action,
                "kind": s.kind,
                "n_fragments": len(s.fragments),
                "cost": s.cost,
                "score": s.score,
                "relevance": s.relevance,
                "failed": s.failed,
                "error": s.error,
            }
            for s in self.steps
        ]

    def as_dict(self) -> dict[str, Any]:
        """A JSON-serializable summary (non-finite scores become null)."""
        trace = [
            {**t, "score": _json_float(t["score"]), "relevance": _json_float(t["relevance"])} for t in self.trace()
        ]
        return {
            "question": self.question,
            "answer": self.answer,
            "abstained": self.abstained,
            "confidence": round(self.confidence, 4),
            "spent": self.spent,
            "note": self.note,
            "failed": self.failed,
            "error": self.error,
            "trace": trace,
            "factuality": _as_json(self.factuality),
            "proposal": _as_json(self.proposal),
        }


def _as_json(value: Any) -> Any:
    if value is None:
        return None
    as_dict = getattr(value, "as_dict", None)
    return as_dict() if callable(as_dict) else repr(value)


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _fragments_of(result: Any) -> list[str]:
    if result is None:
        return []
    if isinstance(result, str):
        result = [result]
    return [str(f) for f in result if f is not None and str(f).strip()]


def _earned(action: Action, question: str, raw: Any) -> float:
    """The confidence a fired action's output earns: its own earned_relevance, else the prospective prior."""
    if action.earned_relevance is None:
        value = relevance_of(action, question)
    else:
        try:
            value = float(call_earned_relevance(action.earned_relevance, question, raw))
        except Exception:  # noqa: BLE001 - an unmeasurable result earns nothing, it does not abort the loop
            return 0.0
    return min(max(value, 0.0), 1.0) if math.isfinite(value) else 0.0


def _confidence(steps: list[Step], min_evidence: int) -> float:
    """Best productive step's relevance, damped by how much evidence was gathered versus required."""
    top = max((s.relevance for s in steps if s.fragments and not s.failed), default=0.0)
    n = sum(len(s.fragments) for s in steps)
    return round(min(1.0, top) * min(1.0, n / max(min_evidence, 1)), 4)


def _route_row(action: Action, question: str, step: Step) -> tuple[dict[str, Any], str, dict[str, Any]]:
    # One row per fired action: the training data for a learned acquisition policy.
    outcome = {"value": 1.0 if step.fragments else 0.0, "n_fragments": len(step.fragments), "failed": step.failed}
    return action_features(action, question), action.kind, outcome


def _reason_row(inv: Investigation) -> tuple[dict[str, Any], str, dict[str, Any]]:
    features = {"action": "investigate", "n_actions": len(inv.steps), "kinds": sorted({s.kind for s in inv.steps})}
    outcome = {"confidence": inv.confidence, "spent": inv.spent, "failed": inv.failed}
    return features, "abstain" if inv.abstained else "answer", outcome


def _rank(actions: list[Action], question: str, scorer: Callable[[Action, str], float]) -> list[tuple[Action, float]]:
    scored: list[tuple[Action, float]] = []
    for action in actions:
        value = scorer(action, question)
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise InvalidArgument(f"scorer returned {value!r} for action {action.name!r}; expected a number")
        scored.append((action, float(value)))
    # NaN sorts last and never fires (NaN > 0 is False); the sort is stable, so ties keep input order.
    return sorted(scored, key=lambda pair: pair[1] if not math.isnan(pair[1]) else -math.inf, reverse=True)


def investigate(
    question: str,
    actions: Iterable[Action],
    answerer: Callable[[str, str], str],
    *,
    budget_cost: float | None = None,
    min_evidence: int = 1,
    min_confidence: float = 0.15,
    target_confidence: float | None = None,
    max_actions: int | None = None,
    scorer: Callable[[Action, str], float] | None = None,
    telemetry: Any = None,
) -> Investigation:
    """Answer ``question`` by firing ``actions`` highest-score-first under a cost budget, or abstain.

    Costs are validated before ranking (MXR-080-0254); each score is computed exactly once and reused
    for ordering, the fire/skip decision and the Step (MXR-080-0256). A raising action becomes a failed
    Step; a raising answerer becomes a failed, abstained Investigation. Early stop: once
    ``min_evidence`` fragments are held at ``target_confidence`` (default ``min_confidence``).
    """
    if not isinstance(question, str):
        raise InvalidArgument(f"question must be a string, got {question!r}")
    pool = list(actions)
    for i, action in enumerate(pool):
        if not isinstance(action, Action):
            raise InvalidArgument(f"actions[{i}] must be an Action, got {action!r}")
        # Action is mutable, so a cost valid at construction may not be valid now (MXR-080-0254).
        require_finite(action.cost, f"actions[{i}] ({action.name!r}) cost")
    if not callable(answerer):
        raise InvalidArgument(f"answerer must be callable, got {answerer!r}")
    min_evidence = require_count(min_evidence, "min_evidence")
    min_confidence = require_finite(min_confidence, "min_confidence")
    stop_at = min_confidence if target_confidence is None else require_finite(target_confidence, "target_confidence")
    if budget_cost is not None:
        budget_cost = require_finite(budget_cost, "budget_cost")
    if max_actions is not None:
        max_actions = require_count(max_actions, "max_actions")

    steps: list[Step] = []
    spent = 0.0
    for action, score in _rank(pool, question, scorer or score_action):
        if max_actions is not None and len(steps) >= max_actions:
            break
        if not score > 0.0:
            continue
        if budget_cost is not None and spent + action.cost > budget_cost:
            continue  # a cheaper, lower-ranked action may still fit
        try:
            raw = action.run(question)
            fragments = _fragments_of(raw)
            step = Step(action.name, action.kind, fragments, action.cost, score, _earned(action, question, raw))
        except Exception as exc:  # noqa: BLE001 - one failing action is recorded, not fatal to the investigation
            step = Step(action.name, action.kind, [], action.cost, score, 0.0, failed=True, error=_error_text(exc))
        spent += action.cost
        steps.append(step)
        emit(telemetry, "route", partial(_route_row, action, question, step))
        n = sum(len(s.fragments) for s in steps)
        if n >= min_evidence and _confidence(steps, min_evidence) >= stop_at:
            break  # the remaining (lower-ranked) actions would be wasted spend

    inv = _conclude(question, steps, answerer, min_evidence, min_confidence)
    emit(telemetry, "reason", partial(_reason_row, inv))
    return inv


def _conclude(
    question: str, steps: list[Step], answerer: Callable[[str, str], str], min_evidence: int, min_confidence: float
) -> Investigation:
    evidence = [f for s in steps for f in s.fragments]
    confidence = _confidence(steps, min_evidence)
    n_failed = sum(s.failed for s in steps)
    failed_note = f" ({n_failed} action(s) raised)" if n_failed else ""
    if len(evidence) < min_evidence or confidence < min_confidence:
        note = (
            f"abstained: {len(evidence)} fragment(s) at confidence {confidence:.2f} from {len(steps)} action(s)"
            f"{failed_note} -- escalate rather than guess"
        )
        return Investigation(question, None, True, confidence, steps, note)
    try:
        text = answerer(question, "\n".join(evidence))
    except Exception as exc:  # noqa: BLE001 - the record survives a failing answerer (MXR-080-0256)
        note = f"abstained: the answerer raised on {len(evidence)} fragment(s)"
        return Investigation(question, None, True, confidence, steps, note, failed=True, error=_error_text(exc))
    if text is None:
        note = f"abstained: the answerer gave no answer from {len(evidence)} fragment(s)"
        return Investigation(question, None, True, confidence, steps, note)
    note = f"answered from {len(evidence)} fragment(s) across {len(steps)} action(s){failed_note}"
    return Investigation(question, str(text), False, confidence, steps, note)
