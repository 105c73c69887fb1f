"""measure_flywheel on the real store: attribution, delta-level withholding, evaluator resets, no side effects."""

from __future__ import annotations

import re

import pytest

from service.beliefs.commands import assimilate
from service.beliefs.flywheel import FlywheelMeasurement, QAItem, measure_flywheel
from service.domain.validation import InvalidArgument

QUESTIONS = [QAItem("What color is the sky?", "blue"), QAItem("What is the capital of France?", "Paris")]
_STOP = {"what", "is", "the", "of", "color"}


def answer_from_context(question: str, context: list[str]) -> str:
    """A pure evaluator: the last word of the first claim sharing a content word with the question."""
    words = {w for w in re.findall(r"\w+", question.lower()) if w not in _STOP}
    for claim in context:
        tokens = re.findall(r"\w+", claim.lower())
        if words & set(tokens):
            return re.findall(r"\w+", claim)[-1]
    return "unknown"


def _grounded(store, text: str, source: str) -> str:
    if source not in store:
        store.add("text", f"receipt {source}", id=source)
    return assimilate(store, text, {"source_id": source, "tier": "real_measurement"}).id


def test_new_beliefs_improve_answers_and_vanish_when_withheld(store) -> None:
    def batch(sub) -> list[str]:
        return [_grounded(sub, "The sky is blue.", "obs-1"), _grounded(sub, "The capital of France is Paris.", "atlas")]

    report = measure_flywheel(store, QUESTIONS, answer_from_context, batch)
    assert report.before == FlywheelMeasurement(0.0, 0.0, (0.0,), (0.0,))
    assert report.after.solve_rate == 1.0 and report.after.grounded_fraction == 1.0
    assert report.withheld.solve_rate == 0.0 and report.withheld.trial_solve_rates == (0.0,)
    assert report.attribution_confirmed
    assert report.as_dict()["after"]["trial_solve_rates"] == [1.0]


def test_an_updated_belief_is_rolled_back_not_hidden(store) -> None:
    sky = _grounded(store, "The sky is blue.", "obs-1")

    def batch(sub) -> list[str]:
        _grounded(sub, "The sky is blue.", "obs-2")  # an UPDATE of a belief the before pass already saw
        return [sky, _grounded(sub, "The capital of France is Paris.", "atlas")]

    report = measure_flywheel(store, QUESTIONS, answer_from_context, batch)
    assert report.before.solve_rate == 0.5 and report.after.solve_rate == 1.0
    # Hiding the updated belief outright would drop withheld to 0.0 and fake a larger attribution.
    assert report.withheld == report.before
    assert report.attribution_confirmed


def test_an_update_that_lifts_credence_is_attributed_to_the_batch(store) -> None:
    sky = assimilate(store, "The sky is blue.", {"source_id": "m", "tier": "model_assertion"}).id

    def batch(sub) -> list[str]:
        return [_grounded(sub, "The sky is blue.", "obs-1")]

    report = measure_flywheel(store, QUESTIONS[:1], answer_from_context, batch, min_credence=0.6)
    assert (report.before.solve_rate, report.after.solve_rate, report.withheld.solve_rate) == (0.0, 1.0, 0.0)
    assert report.attribution_confirmed
    assert store.get(sky).payload["credence"] > 0.9  # the store keeps the batch's real effect


def test_measuring_leaves_no_trace_in_the_store_or_its_log(store) -> None:
    sky = _grounded(store, "The sky is blue.", "obs-1")
    seen: dict[str, object] = {}

    def batch(sub) -> list[str]:
        ids = [_grounded(sub, "The sky is blue.", "obs-2"), _grounded(sub, "The capital of France is Paris.", "a")]
        seen["head"] = sub.events.head()
        seen["sky"] = sub.get(sky).to_json()
        return ids

    measure_flywheel(store, QUESTIONS, answer_from_context, batch)
    assert store.events.head() == seen["head"]
    assert store.get(sky).to_json() == seen["sky"]
    assert store.verify_chain().ok


def test_no_gain_is_not_attributed(store) -> None:
    _grounded(store, "The sky is blue.", "obs-1")
    report = measure_flywheel(store, QUESTIONS[:1], answer_from_context, lambda sub: [])
    assert report.before.solve_rate == report.after.solve_rate == report.withheld.solve_rate == 1.0
    assert not report.attribution_confirmed


def test_reset_runs_before_every_measurement_of_every_trial(store) -> None:
    state = {"calls": 0, "resets": []}

    def warming_answer(question: str, context: list[str]) -> str:
        # A stateful evaluator: after warming up it answers from memory, whatever the store holds.
        state["calls"] += 1
        return "blue" if state["calls"] > 1 else answer_from_context(question, context)

    def reset() -> None:
        state["resets"].append(state["calls"])
        state["calls"] = 0

    def batch(sub) -> list[str]:
        return [_grounded(sub, "The sky is blue.", "obs-1")]

    report = measure_flywheel(store, QUESTIONS[:1], warming_answer, batch, reset_answer_fn=reset, trials=3)
    assert state["resets"] == [0] + [1] * 8  # 3 passes x 3 trials, each measurement started fresh
    assert report.before.trial_solve_rates == (0.0, 0.0, 0.0)
    assert report.after.trial_solve_rates == (1.0, 1.0, 1.0) and report.withheld.trial_solve_rates == (0.0,) * 3
    assert report.attribution_confirmed


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"trials": 2}, "reset_answer_fn"),
        ({"trials": 0, "reset_answer_fn": lambda: None}, "trials"),
        ({"k": True}, "k"),
        ({"min_credence": 2.0}, "min_credence"),
    ],
)
def test_bad_arguments_fail_before_the_batch_runs(store, kw, match) -> None:
    ran = []
    with pytest.raises(InvalidArgument, match=match):
        measure_flywheel(store, QUESTIONS, answer_from_context, lambda sub: ran.append(1) or [], **kw)
    assert ran == []


def test_the_batch_must_return_the_ids_it_touched(store) -> None:
    with pytest.raises(InvalidArgument, match="assimilate_batch"):
        measure_flywheel(store, QUESTIONS, answer_from_context, lambda sub: None)
    with pytest.raises(InvalidArgument, match="QAItem"):
        measure_flywheel(store, ["what?"], answer_from_context, lambda sub: [])
