"""Harness: schema + action whitelist + secret guardrails + escalation around a Reasoner.

Each request is refused (schema), answered, or escalated (abstention: never a guess, never a silent
drop). Secrets are masked in the request, in every evidence fragment (each action in the harness's
frozen view redacts its own output) and in the answer before anything leaves the harness.
"""

from __future__ import annotations

import contextvars
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from service.domain.validation import InvalidArgument, require_count, require_finite, require_name
from service.reasoning.act import Action, Investigation
from service.reasoning.action import call_earned_relevance
from service.reasoning.harness_registry import find_harnesses, register_harness

__all__ = [
    "Harness",
    "HarnessResult",
    "find_harnesses",
    "monitoring_harness",
    "register_harness",
    "support_triage_harness",
]

REFUSED, ANSWERED, ESCALATED = "refused", "answered", "escalated"
_STATUSES = (REFUSED, ANSWERED, ESCALATED)

# Per-request tally of secrets masked inside actions; a ContextVar keeps concurrent requests apart.
_TALLY: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("harness_redactions", default=None)


def _redact(text: str) -> tuple[str, int]:
    """Mask secrets in ``text`` with the service's detector; returns the clean text and the finding count."""
    from service.guard.secrets import detect_secrets, redact_secrets

    found = len(detect_secrets(text).findings)
    return (redact_secrets(text), found) if found else (text, 0)


def _tally(n: int) -> None:
    counter = _TALLY.get()
    if counter is not None:
        counter[0] += n


class _Redacted(list):  # type: ignore[type-arg]
    """Redacted fragments that keep the action's raw output, so its earned_relevance still reads it."""

    origin: Any = None


def _redacting(action: Action) -> Action:
    def run(question: str) -> list[str]:
        raw = action.run(question)
        items = [raw] if isinstance(raw, str) else list(raw or [])
        out = _Redacted()
        for fragment in items:
            if fragment is None:
                continue
            clean, n = _redact(str(fragment))
            _tally(n)
            out.append(clean)
        out.origin = raw
        return out

    earned = action.earned_relevance
    if earned is None:
        return dataclasses.replace(action, run=run)
    return dataclasses.replace(
        action,
        run=run,
        earned_relevance=lambda q, frs: call_earned_relevance(earned, q, getattr(frs, "origin", frs)),
    )


@dataclass
class HarnessResult:
    """One request's outcome: which gate decided (refused/answered/escalated), and the evidence."""

    status: str
    answer: str | None = None
    reason: str = ""
    investigation: Any = None
    redactions: int = 0

    def __post_init__(self) -> None:
        if self.status not in _STATUSES:
            raise InvalidArgument(f"HarnessResult.status must be one of {_STATUSES}, got {self.status!r}")
        self.redactions = require_count(self.redactions, "redactions")

    def as_dict(self) -> dict[str, Any]:
        """A JSON-serializable harness result."""
        inv = self.investigation
        return {
            "status": self.status,
            "answer": self.answer,
            "reason": self.reason,
            "redactions": self.redactions,
            "investigation": inv.as_dict() if callable(getattr(inv, "as_dict", None)) else None,
        }


def _redact_investigation(inv: Investigation) -> tuple[Investigation, int]:
    total = 0

    def clean(text: str) -> str:
        nonlocal total
        out, n = _redact(text)
        total += n
        return out

    steps = [dataclasses.replace(s, fragments=[clean(f) for f in s.fragments], error=clean(s.error)) for s in inv.steps]
    answer = None if inv.answer is None else clean(inv.answer)
    redacted = dataclasses.replace(
        inv, question=clean(inv.question), answer=answer, steps=steps, note=clean(inv.note), error=clean(inv.error)
    )
    return redacted, total


class Harness:
    """Schema + whitelist + guardrails + escalation around a reasoner, over an action view frozen at construction."""

    def __init__(
        self,
        reasoner: Any,
        *,
        name: str,
        description: str = "",
        validate: Callable[[str], str | None] | None = None,
        allowed_kinds: tuple[str, ...] | None = None,
        escalate: Callable[[str, Any], str] | None = None,
        min_confidence: float = 0.15,
        on_result: Callable[[HarnessResult], None] | None = None,
    ) -> None:
        self.name = require_name(name, "name")
        if not isinstance(description, str):
            raise InvalidArgument(f"description must be a string, got {description!r}")
        if isinstance(allowed_kinds, str):
            raise InvalidArgument("allowed_kinds must be a tuple of kinds, not a single string")
        for hook, label in ((validate, "validate"), (escalate, "escalate"), (on_result, "on_result")):
            if hook is not None and not callable(hook):
                raise InvalidArgument(f"{label} must be callable or None, got {hook!r}")
        self.reasoner = reasoner
        self.description = description
        self.validate = validate
        self.allowed_kinds = None if allowed_kinds is None else tuple(str(k) for k in allowed_kinds)
        self.escalate = escalate
        self.min_confidence = require_finite(min_confidence, "min_confidence")
        self.on_result = on_result
        # Read the shared reasoner exactly once: later add_action() calls or other harnesses never reach this view.
        allowed = None if self.allowed_kinds is None else set(self.allowed_kinds)
        self._actions: tuple[Action, ...] = tuple(
            _redacting(a) for a in reasoner.actions if allowed is None or a.kind in allowed
        )

    @property
    def actions(self) -> tuple[Action, ...]:
        """This harness's own immutable, redaction-wrapped action view (frozen at construction)."""
        return self._actions

    def handle(self, request: str) -> HarnessResult:
        """Run one request through every gate: schema -> guardrails -> reasoner -> escalation."""
        if not isinstance(request, str):
            return self._emit(
                HarnessResult(REFUSED, reason=f"schema: request must be a string, got {type(request).__name__}")
            )
        if self.validate is not None:
            try:
                problem = self.validate(request)
            except Exception as exc:  # noqa: BLE001 - a validator that cannot decide refuses (fail closed)
                problem = f"validator raised {type(exc).__name__}: {exc}"
            if problem:
                reason, n = _redact(f"schema: {problem}")
                return self._emit(HarnessResult(REFUSED, reason=reason, redactions=n))

        clean, n_request = _redact(request)
        counter = [0]
        token = _TALLY.set(counter)
        try:
            inv = self.reasoner.ask(clean, actions=self._actions, min_confidence=self.min_confidence)
        except Exception as exc:  # noqa: BLE001 - a broken reasoner escalates; it never drops the request
            inv = Investigation(
                clean,
                None,
                True,
                0.0,
                note="abstained: the reasoner raised",
                failed=True,
                error=f"{type(exc).__name__}: {exc}",
            )
        finally:
            _TALLY.reset(token)
        inv, n_output = _redact_investigation(inv)
        redactions = n_request + counter[0] + n_output

        if not inv.abstained:
            return self._emit(HarnessResult(ANSWERED, answer=inv.answer, investigation=inv, redactions=redactions))
        reason = inv.note if not inv.error else f"{inv.note} ({inv.error})"
        note = None
        if self.escalate is not None:
            try:
                note = self.escalate(clean, inv)
            except Exception as exc:  # noqa: BLE001 - the escalation is still reported, with why the handler failed
                reason = f"{reason}; escalation handler raised {_redact(f'{type(exc).__name__}: {exc}')[0]}"
        return self._emit(
            HarnessResult(
                ESCALATED, answer=str(note) if note else None, reason=reason, investigation=inv, redactions=redactions
            )
        )

    def _emit(self, result: HarnessResult) -> HarnessResult:
        if self.on_result is not None:
            try:
                self.on_result(result)
            except Exception:  # noqa: BLE001 - a UI hook never breaks the request path
                pass
        return result


def _no_empty_or_oversized(max_chars: int) -> Callable[[str], str | None]:
    def validate(request: str) -> str | None:
        if not request.strip():
            return "empty request"
        if len(request) > max_chars:
            return f"request over {max_chars} chars"
        return None

    return validate


def support_triage_harness(
    substrate: Any,
    answerer: Callable[[str, str], str],
    *,
    escalate: Callable[[str, Any], str] | None = None,
    max_chars: int = 2000,
) -> Harness:
    """Support triage: retrieve-only, refuse empty/oversized requests, escalate what the knowledge cannot support."""
    from service.reasoning.reasoner import Reasoner

    max_chars = require_count(max_chars, "max_chars")
    reasoner = Reasoner(answerer, substrate=substrate, retrieve_min_score=0.2)
    return Harness(
        reasoner,
        name="support-triage",
        description="answer support questions from the knowledge base or escalate to a human",
        validate=_no_empty_or_oversized(max_chars),
        allowed_kinds=("retrieve",),
        escalate=escalate,
        min_confidence=0.3,
    )


def monitoring_harness(reasoner: Any, *, escalate: Callable[[str, Any], str] | None = None) -> Harness:
    """Monitoring/alerting: retrieve, compute and simulate allowed (checks, what-ifs); no create, no delegation."""
    return Harness(
        reasoner,
        name="monitoring",
        description="run drift checks and what-ifs over deployed models; alert on trips",
        allowed_kinds=("retrieve", "compute", "simulate"),
        escalate=escalate,
        min_confidence=0.2,
    )
