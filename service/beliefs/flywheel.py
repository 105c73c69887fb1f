"""The knowledge flywheel: does assimilating a batch of beliefs improve held-out answers, attributably?

Three passes with ``answer_fn`` held fixed: before the batch, after it, and "withheld" -- after it with
exactly the batch's own delta removed (MXR-080-0246). The withheld view is computed, never written: an
updated belief is ranked with its pre-batch state read from the log, a created one is hidden, so the
store (and its log) is untouched by the measurement itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from projections import loads
from projections.items import ITEM_EVENTS
from service.beliefs.model import BeliefItem, belief_from_item, check_number
from service.beliefs.query import rank_beliefs
from service.domain.validation import InvalidArgument, require_count

if TYPE_CHECKING:
    from service.substrate import Substrate

__all__ = ["FlywheelMeasurement", "FlywheelReport", "QAItem", "measure_flywheel"]

_TOLERANCE = 1e-9
_LAST_STATE = text(
    "SELECT DISTINCT ON (stream) stream, seq, type, (data->'item')::text FROM events "
    "WHERE stream = ANY(CAST(:ids AS text[])) AND seq <= :head AND type = ANY(CAST(:types AS text[])) "
    "ORDER BY stream, seq DESC"
)
# A merge removes the other item from the kept item's stream, not its own.
_MERGED_AWAY = text(
    "SELECT data->>'removed', max(seq) FROM events WHERE type = 'ItemsMerged' AND seq <= :head "
    "AND data->>'removed' = ANY(CAST(:ids AS text[])) GROUP BY 1"
)


@dataclass(frozen=True)
class QAItem:
    """One held-out question: answer_fn is judged correct if it produces ``answer`` from the retrieved context."""

    question: str
    answer: str

    def __post_init__(self) -> None:
        if not isinstance(self.question, str) or not self.question.strip():
            raise InvalidArgument(f"QAItem.question must be a non-empty string, got {self.question!r}")
        if not isinstance(self.answer, str):
            raise InvalidArgument(f"QAItem.answer must be a string, got {self.answer!r}")


@dataclass(frozen=True)
class FlywheelMeasurement:
    """Held-out solve rate and grounding rate (share of questions that retrieved a belief) for one pass.

    ``trial_solve_rates`` / ``trial_grounded_fractions`` keep every replicate's rate (MXR-080-0247).
    """

    solve_rate: float
    grounded_fraction: float
    trial_solve_rates: tuple[float, ...] = field(default_factory=tuple)
    trial_grounded_fractions: tuple[float, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        return {
            "solve_rate": self.solve_rate,
            "grounded_fraction": self.grounded_fraction,
            "trial_solve_rates": list(self.trial_solve_rates),
            "trial_grounded_fractions": list(self.trial_grounded_fractions),
        }


@dataclass(frozen=True)
class FlywheelReport:
    """Before/after/withheld flywheel measurements with an attribution check."""

    before: FlywheelMeasurement
    after: FlywheelMeasurement
    withheld: FlywheelMeasurement
    attribution_confirmed: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "before": self.before.as_dict(),
            "after": self.after.as_dict(),
            "withheld": self.withheld.as_dict(),
            "attribution_confirmed": self.attribution_confirmed,
        }


def _questions(questions: Any) -> list[QAItem]:
    if isinstance(questions, (str, bytes)) or not isinstance(questions, Iterable):
        raise InvalidArgument(f"questions must be a sequence of QAItem, got {type(questions).__name__}")
    out = []
    for i, q in enumerate(questions):
        if isinstance(q, QAItem):
            out.append(q)
        elif isinstance(q, tuple) and len(q) == 2:
            out.append(QAItem(*q))
        else:
            raise InvalidArgument(f"questions[{i}] must be a QAItem (or a (question, answer) pair), got {q!r}")
    return out


def _same(produced: Any, expected: str) -> bool:
    # Judged on content, not on incidental case or spacing.
    return isinstance(produced, str) and " ".join(produced.casefold().split()) == " ".join(expected.casefold().split())


def _pass(
    sub: Substrate,
    questions: Sequence[QAItem],
    answer_fn: Callable[[str, list[str]], Any],
    k: int,
    min_credence: float | None,
    rollback: dict[str, BeliefItem | None],
    exclude: set[str],
) -> tuple[float, float]:
    correct = grounded = 0
    for qa in questions:
        beliefs = rank_beliefs(sub, qa.question, k, min_credence, None, rollback=rollback, exclude=exclude)
        grounded += bool(beliefs)
        correct += _same(answer_fn(qa.question, [b.claim.text for b in beliefs]), qa.answer)
    n = len(questions)
    return (correct / n, grounded / n) if n else (0.0, 0.0)


def _pre_batch(sub: Substrate, ids: set[str], head: int) -> tuple[dict[str, BeliefItem | None], set[str]]:
    """Each id's state as of log position ``head``: rollback states for those that existed, and the rest."""
    if not ids:
        return {}, set()
    params = {"ids": sorted(ids), "head": head}
    with sub.engine.connect() as c:
        last = c.execute(_LAST_STATE, {**params, "types": sorted(ITEM_EVENTS | {"ItemRemoved"})}).all()
        merged: dict[str, int] = {r[0]: int(r[1]) for r in c.execute(_MERGED_AWAY, params)}
    rollback: dict[str, BeliefItem | None] = {}
    for stream, seq, kind, item in last:
        if kind == "ItemRemoved" or item is None or merged.get(stream, -1) > seq:
            continue
        try:
            rollback[stream] = belief_from_item(loads(item))
        except (ValueError, TypeError, KeyError):
            rollback[stream] = None  # it existed pre-batch but was not a belief: nothing to retrieve
    return rollback, ids - rollback.keys()


def _attributed(before: FlywheelMeasurement, after: FlywheelMeasurement, withheld: FlywheelMeasurement) -> bool:
    # Paired over matched replicates: trial i of every pass started from the same reset evaluator state.
    gain = fmean(a - b for a, b in zip(after.trial_solve_rates, before.trial_solve_rates))
    residual = fmean(w - b for w, b in zip(withheld.trial_solve_rates, before.trial_solve_rates))
    return gain > _TOLERANCE and residual <= _TOLERANCE


def measure_flywheel(
    sub: Substrate,
    questions: Sequence[QAItem],
    answer_fn: Callable[[str, list[str]], str],
    assimilate_batch: Callable[[Substrate], Iterable[str]],
    *,
    k: int = 5,
    min_credence: float | None = None,
    reset_answer_fn: Callable[[], Any] | None = None,
    trials: int = 1,
) -> FlywheelReport:
    """Measure ``answer_fn`` on ``questions`` before and after ``assimilate_batch(sub)`` (which returns the ids
    it touched), plus a withheld pass that removes exactly the batch's delta (MXR-080-0246).

    ``answer_fn(question, context_claims)`` must be pure, or ``reset_answer_fn`` rewinds it before every
    single measurement; ``trials > 1`` repeats each pass (requires the reset) and keeps every rate
    (MXR-080-0247). Attribution holds when the mean paired gain is positive and the withheld pass's mean
    paired gain is not.
    """
    qs = _questions(questions)
    require_count(k, "k")
    require_count(trials, "trials")
    if trials < 1:
        raise InvalidArgument(f"trials must be >= 1, got {trials!r}")
    if trials > 1 and reset_answer_fn is None:
        raise InvalidArgument(
            "trials > 1 requires reset_answer_fn (MXR-080-0247): replicates are only paired samples when "
            "answer_fn is rewound to the same starting state before each one"
        )
    if min_credence is not None and not 0.0 <= check_number(min_credence, "min_credence") <= 1.0:
        raise InvalidArgument(f"min_credence must be within [0, 1], got {min_credence!r}")
    for name, fn in (("answer_fn", answer_fn), ("assimilate_batch", assimilate_batch)):
        if not callable(fn):
            raise InvalidArgument(f"{name} must be callable, got {type(fn).__name__}")
    if reset_answer_fn is not None and not callable(reset_answer_fn):
        raise InvalidArgument(f"reset_answer_fn must be callable, got {type(reset_answer_fn).__name__}")

    def run(rollback: dict[str, BeliefItem | None], exclude: set[str]) -> FlywheelMeasurement:
        rates = []
        for _ in range(trials):
            if reset_answer_fn is not None:
                reset_answer_fn()
            rates.append(_pass(sub, qs, answer_fn, k, min_credence, rollback, exclude))
        solve, grounded = tuple(r[0] for r in rates), tuple(r[1] for r in rates)
        return FlywheelMeasurement(fmean(solve), fmean(grounded), solve, grounded)

    before = run({}, set())
    head = sub.events.head()
    touched = assimilate_batch(sub)
    if touched is None or isinstance(touched, (str, bytes)) or not isinstance(touched, Iterable):
        raise InvalidArgument(f"assimilate_batch must return the ids it touched, got {touched!r}")
    ids = set(touched)
    if not all(isinstance(i, str) for i in ids):
        raise InvalidArgument(f"assimilate_batch must return string ids, got {sorted(map(repr, ids))}")
    after = run({}, set())
    rollback, created = _pre_batch(sub, ids, head)
    withheld = run(rollback, created)
    return FlywheelReport(before, after, withheld, _attributed(before, after, withheld))
