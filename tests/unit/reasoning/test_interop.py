"""ExternalModel semantic-entropy UQ, the fail-closed Confidence verdict, and external_action."""

from __future__ import annotations

import itertools
import math

import pytest

from service.domain.validation import InvalidArgument
from service.reasoning.act import investigate
from service.reasoning.interop import Confidence, ExternalAnswer, ExternalModel, _semantic_entropy, external_action


def steady(prompt):
    return "paris"


def cycling():
    counter = itertools.count()
    return lambda prompt: f"answer-{next(counter)}"


def test_confidence_is_a_lowercase_str_enum():
    assert [c.value for c in Confidence] == ["confident", "uncertain", "uncalibrated"]


def test_semantic_entropy_clusters_by_equivalence():
    assert _semantic_entropy(["a", "a", "a", "a"]) == 0.0
    assert _semantic_entropy(["a", "b"]) == pytest.approx(math.log(2))
    assert _semantic_entropy(["Paris", "paris"], lambda x, y: x.lower() == y.lower()) == 0.0


def test_without_a_calibration_policy_every_answer_is_uncalibrated_even_at_zero_entropy():
    model = ExternalModel(steady)
    assert model.max_entropy is None
    result = model.answer("capital of france?")
    assert result.entropy == 0.0 and result.state is Confidence.UNCALIBRATED
    assert not result.confident and not result.calibrated
    assert model.confident("capital of france?") is False


def test_confident_fails_closed_without_sampling_when_uncalibrated():
    calls = []
    model = ExternalModel(lambda p: calls.append(p) or "x")
    assert model.confident("q") is False and calls == []


def test_explicit_cutoff_gives_confident_and_uncertain_verdicts():
    assert ExternalModel(steady, max_entropy=0.1).answer("q").state is Confidence.CONFIDENT
    noisy = ExternalModel(cycling(), max_entropy=0.1).answer("q")
    assert noisy.state is Confidence.UNCERTAIN and noisy.calibrated and not noisy.confident


def test_the_returned_answer_is_the_first_draw_of_the_measured_batch():
    model = ExternalModel(cycling(), max_entropy=10.0, samples=4)
    assert model.answer("q").answer == "answer-0"
    assert model.answer("q").answer == "answer-4"


@pytest.mark.parametrize("cutoff", [-0.1, math.nan, math.inf])
def test_max_entropy_must_be_finite_and_non_negative(cutoff):
    with pytest.raises(InvalidArgument):
        ExternalModel(steady, max_entropy=cutoff)


@pytest.mark.parametrize("kw", [{"samples": 0}, {"samples": 2.5}, {"alpha": 0.0}, {"alpha": 1.0}])
def test_sampling_and_alpha_are_validated(kw):
    with pytest.raises(InvalidArgument):
        ExternalModel(steady, **kw)


def test_no_calibration_prompts_yield_no_quantile_and_stay_uncalibrated():
    model = ExternalModel(steady, calibration_prompts=[], alpha=0.1)
    assert model.max_entropy is None
    assert model.answer("q").state is Confidence.UNCALIBRATED


def test_a_few_calibration_prompts_already_set_a_finite_cutoff():
    model = ExternalModel(lambda p: "the tax rate is 8.25 percent", calibration_prompts=["q1", "q2", "q3"], samples=6)
    assert model.max_entropy == 0.0
    verdict = model.answer("q")
    assert verdict.state is Confidence.CONFIDENT and verdict.confident and verdict.calibrated


def test_the_cutoff_is_the_one_minus_alpha_quantile_of_the_calibration_entropies():
    answers = iter(["a", "a", "a", "a"] + ["a", "b", "a", "b"] + ["a", "b", "c", "d"])
    model = ExternalModel(lambda p: next(answers), calibration_prompts=["p1", "p2", "p3"], samples=4, alpha=0.5)
    assert model.max_entropy == pytest.approx(math.log(2))  # the median of 0, ln 2 and ln 4


def test_enough_calibration_prompts_set_a_finite_cutoff():
    model = ExternalModel(steady, calibration_prompts=[f"p{i}" for i in range(20)], alpha=0.1)
    assert model.max_entropy == 0.0
    assert model.answer("q").state is Confidence.CONFIDENT


def test_explicit_cutoff_overrides_calibration():
    assert ExternalModel(steady, calibration_prompts=["p"] * 20, max_entropy=0.7).max_entropy == 0.7


def test_external_answer_coerces_its_state():
    assert ExternalAnswer("p", "a", 0.0, "confident").state is Confidence.CONFIDENT


def test_external_action_withholds_uncalibrated_and_uncertain_answers_by_default():
    assert external_action(ExternalModel(steady)).run("q") == []
    assert external_action(ExternalModel(cycling(), max_entropy=0.1)).run("q") == []
    fragment = external_action(ExternalModel(steady, max_entropy=0.1)).run("q")
    assert fragment == ["external[confident, entropy=0.000] => paris"]


def test_trust_uncertain_admits_the_answer_tagged_with_its_verdict():
    (fragment,) = external_action(ExternalModel(steady), trust_uncertain=True).run("q")
    assert fragment.startswith("external[uncalibrated,")


def test_external_action_is_a_costly_delegate_the_reasoner_can_fire():
    action = external_action(ExternalModel(steady, max_entropy=0.1), description="capital cities")
    assert action.kind == "delegate" and action.cost == 8.0 and action.name == "external"
    inv = investigate("capital cities of france", [action], lambda q, ctx: ctx)
    assert inv.answer == "external[confident, entropy=0.000] => paris"
