"""Action builders: adapt retrieval, skills, simulators, creators and delegates to the Action protocol."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from service.domain.validation import InvalidArgument, require_count, require_finite
from service.reasoning.action import Action, binds, signature_of

__all__ = ["compute_action", "create_action", "delegate_action", "retrieve_action", "simulate_action"]

# Retrieval is always at least weakly worth trying: a routing prior only, never earned confidence.
RETRIEVE_PRIOR = 0.35


class _ScoredFragments(list):  # type: ignore[type-arg]
    """Fragments that remember the best retrieval score among themselves (read by earned_relevance)."""

    top_score: float = 0.0


def _retrieved_relevance(question: str, fragments: Any) -> float:
    return float(getattr(fragments, "top_score", 0.0))


def _search(substrate: Any, query: str, k: int, scope: str | None) -> list[tuple[Any, float]]:
    if k == 0:
        return []
    # scope is passed only when set, so any object with the search surface works.
    return list(substrate.search(query, k=k) if scope is None else substrate.search(query, k=k, scope=scope))


def retrieve_action(
    substrate: Any,
    *,
    name: str = "retrieve",
    k: int = 6,
    scope: str | None = None,
    cost: float = 1.0,
    min_score: float = 0.0,
) -> Action:
    """A RETRIEVE action over a substrate: items scoring strictly above ``min_score`` are evidence, and never one
    scoring 0 (no overlap at all), however low the floor (a negative one included).

    Its step's earned relevance is the true top score of the kept items (0.0 when none survived),
    never the routing prior ``base_score``.
    """
    k = require_count(k, "k")
    floor = max(require_finite(min_score, "min_score", minimum=None), 0.0)
    if scope is not None and (not isinstance(scope, str) or not scope.strip()):
        raise InvalidArgument(f"scope must be a non-empty string or None, got {scope!r}")

    def _run(question: str) -> list[str]:
        kept = _ScoredFragments()
        for item, score in _search(substrate, question, k, scope):
            score = float(score)
            # Strict '>' even at the default floor: an exact-zero score means no overlap at all (MXR-080-0255).
            if not math.isfinite(score) or not score > floor or not (item.text or "").strip():
                continue
            kept.append(item.text)
            kept.top_score = max(kept.top_score, min(score, 1.0))
        return kept

    return Action(
        name=name,
        kind="retrieve",
        run=_run,
        cost=cost,
        description="",
        base_score=RETRIEVE_PRIOR,
        earned_relevance=_retrieved_relevance,
    )


def _call_skill_guessing(skill: Any, question: str) -> Any:
    """Fallback for a skill with no inspectable signature: try the question, on TypeError call it bare."""
    try:
        return skill(question)
    except TypeError as with_question:
        try:
            return skill()
        except TypeError:
            raise with_question from None


def _skill_caller(skill: Any) -> Callable[[str], Any]:
    """How to call ``skill`` on a question, decided once from its signature (SUPPLEMENT: Skill protocol).

    A skill that accepts the question gets exactly one call with it, so a TypeError raised inside its
    body surfaces as the step's failure instead of triggering a bare retry.
    """
    signature = signature_of(skill)
    if signature is None:
        return lambda question: _call_skill_guessing(skill, question)
    if binds(signature, ""):
        return lambda question: skill(question)
    return lambda question: skill()


def _usable_name(value: Any) -> str | None:
    # "<lambda>" and other "<...>" placeholders say nothing about what the skill computes.
    if not isinstance(value, str) or not value.strip() or (value.startswith("<") and value.endswith(">")):
        return None
    return value


def _skill_name(skill: Any) -> str:
    """The skill's ``name`` attribute, else its function name, else ``"compute"`` (e.g. for a lambda)."""
    return _usable_name(getattr(skill, "name", None)) or _usable_name(getattr(skill, "__name__", None)) or "compute"


def compute_action(skill: Any, *, name: str | None = None, cost: float = 1.0, description: str | None = None) -> Action:
    """A COMPUTE action that runs a Skill and reports ``"<name> => <result>"`` (no fragment for ``None``)."""
    if not callable(skill):
        raise InvalidArgument(f"skill must be callable, got {skill!r}")
    label = name or _skill_name(skill)
    desc = description if description is not None else str(getattr(skill, "description", "") or "")
    call = _skill_caller(skill)

    def _run(question: str) -> list[str]:
        result = call(question)
        return [] if result is None else [f"{label} => {result}"]

    return Action(name=str(label), kind="compute", run=_run, cost=cost, description=desc)


def simulate_action(
    simulator: Any,
    field_index: int,
    scenario: str,
    *,
    name: str | None = None,
    cost: float = 2.0,
    description: str = "",
) -> Action:
    """A SIMULATE action that runs a what-if scenario and reports the simulated outcome mean."""
    field_index = require_count(field_index, "field_index")
    if not callable(getattr(simulator, "outcome_mean", None)):
        raise InvalidArgument(f"simulator must have outcome_mean(field_index, scenario=...), got {simulator!r}")

    def _run(question: str) -> list[str]:
        mean = simulator.outcome_mean(field_index, scenario=scenario)
        value = float(mean)
        if not math.isfinite(value):
            raise ValueError(f"simulator returned a non-finite mean {mean!r} for scenario {scenario!r}")
        return [f"under scenario '{scenario}', mean of field {field_index} = {value:.3f}"]

    return Action(name=name or f"simulate:{scenario}", kind="simulate", run=_run, cost=cost, description=description)


def _describe_artifact(label: str, artifact: Any) -> str:
    for attr in ("guarantee", "certificate"):
        value = getattr(artifact, attr, None)
        if value is not None:
            why = getattr(artifact, "why", None)
            detail = str(why()) if callable(why) else ""
            return f"{label} => built {type(artifact).__name__} ({attr} {value}). {detail}".strip()
    try:
        return f"{label} => built an artifact ({len(artifact)} rows/items)"
    except TypeError:
        return f"{label} => built {artifact!r}"


def create_action(
    build: Callable[[str], Any],
    *,
    name: str = "create",
    cost: float = 4.0,
    description: str = "",
    report: Callable[[Any], str] | None = None,
) -> Action:
    """A CREATE action: ``build(question)`` makes an artifact, ``report`` renders it (default: guarantee, len or repr)."""
    if not callable(build):
        raise InvalidArgument(f"build must be callable, got {build!r}")

    def _run(question: str) -> list[str]:
        artifact = build(question)
        if artifact is None:
            return []
        return [str(report(artifact)) if report is not None else _describe_artifact(name, artifact)]

    return Action(name=name, kind="create", run=_run, cost=cost, description=description)


def delegate_action(
    delegate: Callable[[str], Any],
    *,
    name: str = "delegate",
    cost: float = 8.0,
    description: str = "",
    priced: bool = True,
) -> Action:
    """A DELEGATE action handing the question to an external worker; the fragment says whether it was priced."""
    if not callable(delegate):
        raise InvalidArgument(f"delegate must be callable, got {delegate!r}")
    tag = "delegate (priced)" if priced else "delegate"

    def _run(question: str) -> list[str]:
        result = delegate(question)
        return [] if result is None else [f"{tag} => {result}"]

    return Action(name=name, kind="delegate", run=_run, cost=cost, description=description)
