"""Spec-conformance of Action/investigate/compute_action against act.txt, SUPPLEMENT.md and the upstream tests."""

from __future__ import annotations

import pytest

from service import Action, compute_action, investigate


def echo(question: str, context: str) -> str:
    return f"A: {context}"


def one_fragment(name: str = "r", **kw) -> Action:
    return Action(name, "retrieve", run=lambda q: ["some fragment"], cost=1.0, base_score=0.35, **kw)


# -- 1. Action is mutable; investigate re-validates costs up front (MXR-080-0254) ---------------------


def test_action_cost_can_be_mutated_and_investigate_rejects_it_before_firing():
    ran: list[str] = []
    a = Action("a", "compute", run=lambda q: ran.append(q) or ["x"], cost=1.0, description="d")
    a.cost = -5.0
    assert a.cost == -5.0
    with pytest.raises(ValueError):
        investigate("d", [a], echo)
    assert ran == []


# -- 2. an invalid cost's message names the action -----------------------------------------------------


def test_negative_cost_message_names_the_action_and_the_value():
    with pytest.raises(ValueError) as info:
        Action("neg_cost_action", "compute", run=lambda q: ["x"], cost=-5.0, description="d")
    assert "neg_cost_action" in str(info.value) and "-5" in str(info.value)


def test_investigate_cost_message_names_the_mutated_action_and_the_value():
    a = Action("neg_cost_action", "compute", run=lambda q: ["x"], cost=1.0, description="d")
    a.cost = -5.0
    with pytest.raises(ValueError) as info:
        investigate("d", [a], echo)
    assert "neg_cost_action" in str(info.value) and "-5" in str(info.value)


# -- 3. earned_relevance: zero-argument or (question, fragments) -------------------------------------


def test_zero_argument_earned_relevance_sets_the_confidence():
    high = investigate("q", [one_fragment(earned_relevance=lambda: 0.9)], echo, min_confidence=0.0)
    low = investigate("q", [one_fragment(earned_relevance=lambda: 0.05)], echo, min_confidence=0.0)
    assert high.confidence == pytest.approx(0.9, abs=0.005)
    assert low.confidence == pytest.approx(0.05, abs=0.005)


def test_two_argument_earned_relevance_receives_question_and_fragments():
    seen: list[tuple[str, list[str]]] = []

    def earned(question, fragments):
        seen.append((question, list(fragments)))
        return 0.7

    inv = investigate("q", [one_fragment(earned_relevance=earned)], echo, min_confidence=0.0)
    assert seen == [("q", ["some fragment"])]
    assert inv.confidence == pytest.approx(0.7)


def test_a_type_error_inside_earned_relevance_is_not_retried_with_another_arity():
    calls: list[tuple] = []

    def earned(question=None, fragments=None):
        calls.append((question, fragments))
        return None + 1  # a bug inside the hook, not an arity mismatch

    inv = investigate("q", [one_fragment(earned_relevance=earned)], echo, min_confidence=0.0)
    assert len(calls) == 1 and calls[0][0] == "q"
    assert inv.steps[0].relevance == 0.0


def test_a_type_error_inside_a_zero_argument_earned_relevance_is_called_once():
    calls: list[int] = []

    def earned():
        calls.append(1)
        raise TypeError("internal bug")

    inv = investigate("q", [one_fragment(earned_relevance=earned)], echo, min_confidence=0.0)
    assert calls == [1] and inv.steps[0].relevance == 0.0


# -- 4. compute_action dispatches on the skill's signature, never on a caught TypeError -------------


def test_a_type_error_inside_a_skill_is_not_masked_by_a_bare_retry():
    calls: list[object] = []

    def buggy_skill(question=None):
        calls.append(question)
        return None + 1

    action = compute_action(buggy_skill, name="buggy")
    with pytest.raises(TypeError):
        action.run("convert 100C")
    assert calls == ["convert 100C"]


def test_a_buggy_skill_surfaces_as_that_steps_failure():
    calls: list[object] = []

    def buggy_skill(question=None):
        calls.append(question)
        return None + 1

    inv = investigate("convert", [compute_action(buggy_skill, name="buggy", description="convert")], echo)
    assert calls == ["convert"]
    assert inv.steps[0].failed and inv.steps[0].error.startswith("TypeError")


def test_a_skill_without_a_question_parameter_is_called_bare():
    assert compute_action(lambda: "42", name="const").run("anything") == ["const => 42"]


def test_a_skill_with_no_inspectable_signature_keeps_the_type_error_fallback():
    class Opaque:
        __signature__ = "unavailable"  # inspect.signature() raises TypeError on this

        def __init__(self) -> None:
            self.calls: list[tuple] = []

        def __call__(self, *args):
            self.calls.append(args)
            if args:
                raise TypeError("takes no question")
            return 7

    skill = Opaque()
    assert compute_action(skill, name="opaque").run("q") == ["opaque => 7"]
    assert skill.calls == [("q",), ()]


# -- 5. compute_action's name: explicit, else the skill's name, else "compute" ----------------------


def test_a_lambda_skill_is_named_compute():
    action = compute_action(lambda q: "x")
    assert action.name == "compute"
    assert action.run("q") == ["compute => x"]


@pytest.mark.parametrize("attr", [None, "", "   "])
def test_a_skill_with_an_unusable_name_attribute_is_named_compute(attr):
    class Skill:
        name = attr

        def __call__(self, question):
            return "x"

    assert compute_action(Skill()).name == "compute"


def test_a_skill_name_attribute_wins_over_the_function_name():
    def fn(question):
        return "x"

    fn.name = "temp"  # type: ignore[attr-defined]
    assert compute_action(fn).name == "temp"
    assert compute_action(fn, name="explicit").name == "explicit"
