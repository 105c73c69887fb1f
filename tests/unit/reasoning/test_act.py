"""investigate(), Action/Step/Investigation and the action builders, over an in-test substrate double."""

from __future__ import annotations

import json
import math
import re

import pytest

from service.domain.items import SubstrateItem
from service.domain.validation import InvalidArgument
from service.reasoning.act import (
    Action,
    Investigation,
    Step,
    action_features,
    compute_action,
    create_action,
    delegate_action,
    investigate,
    relevance_of,
    retrieve_action,
    score_action,
    simulate_action,
)
from service.reasoning.reasoner import Reasoner


class FakeSubstrate:
    """Test double for the substrate surface: token-overlap search that also returns zero-score items."""

    def __init__(self, *texts: str) -> None:
        self.items = [SubstrateItem("text", t) for t in texts]

    def search(self, query, k=5, *, kind=None, scope=None):
        q = set(re.findall(r"[a-z0-9]+", query.lower()))
        scored = [
            (it, len(q & set(re.findall(r"[a-z0-9]+", it.text.lower()))) / max(len(q), 1))
            for it in self.items
            if scope is None or it.scope == scope
        ]
        return sorted(scored, key=lambda p: -p[1])[:k]


def echo(question: str, context: str) -> str:
    return f"A: {context}"


def fixed(name: str, fragments: list[str], *, cost: float = 1.0, description: str = "", base: float = 0.0) -> Action:
    return Action(name, "compute", lambda q: list(fragments), cost=cost, description=description, base_score=base)


# -- Action / scoring ------------------------------------------------------------------------------


@pytest.mark.parametrize("cost", [-1.0, math.nan, math.inf, "1", True])
def test_action_rejects_a_cost_that_is_not_finite_and_non_negative(cost):
    with pytest.raises(InvalidArgument):
        Action("a", "compute", lambda q: [], cost=cost)


def test_action_is_mutable_so_score_action_revalidates_the_cost_it_divides_by():
    action = fixed("a", [])
    action.cost = -5.0
    with pytest.raises(InvalidArgument, match="'a'"):
        score_action(action, "q")


def test_relevance_of_is_base_floor_plus_content_word_overlap():
    action = fixed("a", [], description="billing refunds", base=0.1)
    assert relevance_of(action, "how do refunds work") == pytest.approx(0.1 + 1 / 2)


def test_score_action_divides_relevance_by_cost():
    action = fixed("a", [], cost=2.0, description="refunds")
    assert score_action(action, "refunds") == pytest.approx(0.5)


def test_score_action_free_on_topic_action_is_infinite_and_free_irrelevant_is_zero():
    assert score_action(fixed("a", [], cost=0.0, description="refunds"), "refunds") == math.inf
    assert score_action(fixed("b", [], cost=0.0, description="weather"), "refunds") == 0.0


def test_action_features_name_kind_cost_and_overlap():
    feats = action_features(fixed("a", [], cost=3, description="refunds"), "refunds policy")
    assert feats == {"kind": "compute", "cost": 3.0, "overlap": 0.5}


# -- investigate -----------------------------------------------------------------------------------


def test_investigate_fires_highest_score_first_and_answers_from_evidence():
    cheap = fixed("cheap", ["refunds take 5 days"], cost=1.0, description="refunds")
    dear = fixed("dear", ["expensive fact"], cost=4.0, description="refunds")
    inv = investigate("refunds", [dear, cheap], echo)
    assert [s.action for s in inv.steps] == ["cheap"]
    assert inv.answer == "A: refunds take 5 days"
    assert not inv.abstained and inv.spent == 1.0


def test_investigate_scores_each_action_exactly_once_and_records_that_score():
    calls: list[str] = []
    values = iter([0.2, 0.9, 0.5])

    def scorer(action, question):
        calls.append(action.name)
        return next(values)

    acts = [fixed(n, []) for n in ("a", "b", "c")]
    inv = investigate("q", acts, echo, scorer=scorer)
    assert calls == ["a", "b", "c"]
    assert [(s.action, s.score) for s in inv.steps] == [("b", 0.9), ("c", 0.5), ("a", 0.2)]


def test_investigate_validates_every_cost_before_firing_anything():
    ran: list[str] = []
    good = Action("good", "compute", lambda q: ran.append("good") or ["x"], description="q")
    bad = Action("bad", "compute", lambda q: ["y"])
    object.__setattr__(bad, "cost", math.nan)  # simulate a corrupted action that bypassed construction
    with pytest.raises(InvalidArgument):
        investigate("q", [good, bad], echo)
    assert ran == []


def test_a_raising_action_becomes_a_failed_step_and_the_loop_continues():
    def boom(q):
        raise RuntimeError("index offline")

    broken = Action("broken", "compute", boom, cost=0.5, description="refunds")
    ok = fixed("ok", ["refund fact"], description="refunds")
    inv = investigate("refunds", [broken, ok], echo)
    first, second = inv.trace()
    assert first["failed"] is True and "RuntimeError: index offline" in first["error"]
    assert first["n_fragments"] == 0
    assert second["failed"] is False and second["n_fragments"] == 1
    assert inv.answer == "A: refund fact"


def test_a_raising_answerer_is_recorded_on_the_investigation_instead_of_propagating():
    def bad_answerer(q, ctx):
        raise ValueError("model down")

    inv = investigate("refunds", [fixed("ok", ["fact"], description="refunds")], bad_answerer)
    assert inv.abstained and inv.failed and inv.answer is None
    assert "model down" in inv.error
    assert len(inv.steps) == 1


def test_investigate_abstains_without_calling_the_answerer_when_evidence_is_thin():
    called = []
    inv = investigate("refunds", [fixed("empty", [], description="refunds")], lambda q, c: called.append(1) or "x")
    assert inv.abstained and inv.answer is None and called == []
    assert "abstained" in inv.note


def test_budget_skips_an_unaffordable_action_but_fires_a_cheaper_one():
    big = fixed("big", ["big fact"], cost=5.0, description="refunds", base=10)
    small = fixed("small", ["small fact"], cost=1.0, description="refunds")
    inv = investigate("refunds", [big, small], echo, budget_cost=2.0)
    assert [s.action for s in inv.steps] == ["small"]


def test_max_actions_caps_the_number_of_fired_actions():
    acts = [fixed(n, [], description="refunds") for n in "abc"]
    inv = investigate("refunds", acts, echo, max_actions=2)
    assert len(inv.steps) == 2


def test_early_stop_once_target_confidence_is_reached():
    first = fixed("first", ["f1"], description="refunds")
    second = fixed("second", ["f2"], cost=2.0, description="refunds")
    assert len(investigate("refunds", [first, second], echo).steps) == 1
    assert len(investigate("refunds", [first, second], echo, min_evidence=2).steps) == 2


def test_zero_scored_actions_never_fire():
    inv = investigate("refunds", [fixed("off", ["x"], description="weather")], echo)
    assert inv.steps == [] and inv.abstained


@pytest.mark.parametrize(
    "kw",
    [
        {"min_evidence": -1},
        {"min_evidence": 1.5},
        {"budget_cost": -1},
        {"max_actions": True},
        {"min_confidence": math.nan},
    ],
)
def test_investigate_rejects_bad_knobs(kw):
    with pytest.raises(InvalidArgument):
        investigate("q", [], echo, **kw)


def test_telemetry_receives_route_and_reason_rows_and_its_failure_is_swallowed():
    rows = []

    class Telemetry:
        def record(self, kind, *, features, choice, outcome):
            rows.append((kind, choice, outcome))

    investigate("refunds", [fixed("ok", ["fact"], description="refunds")], echo, telemetry=Telemetry())
    assert [r[0] for r in rows] == ["route", "reason"]
    assert rows[1][1] == "answer"

    class Broken:
        def record(self, *a, **k):
            raise RuntimeError("telemetry down")

    inv = investigate("refunds", [fixed("ok", ["fact"], description="refunds")], echo, telemetry=Broken())
    assert inv.answer == "A: fact"


def test_investigation_as_dict_is_strict_json_even_with_an_infinite_score():
    free = fixed("free", ["fact"], cost=0.0, description="refunds")
    inv = investigate("refunds", [free], echo)
    assert inv.steps[0].score == math.inf
    payload = json.loads(json.dumps(inv.as_dict(), allow_nan=False))
    assert payload["trace"][0]["score"] is None
    assert payload["trace"][0]["failed"] is False


def test_investigation_evidence_and_spent():
    inv = Investigation(
        "q", None, True, 0.0, [Step("a", "compute", ["x", "y"], 1.5, 1.0), Step("b", "compute", ["z"], 2, 1)]
    )
    assert inv.evidence == ["x", "y", "z"] and inv.spent == 3.5


# -- retrieve_action -------------------------------------------------------------------------------


def test_retrieve_excludes_exact_zero_scores_even_at_the_default_floor():
    sub = FakeSubstrate("refunds take five days", "the office dog is named rex")
    fragments = retrieve_action(sub).run("refunds policy")
    assert fragments == ["refunds take five days"]


def test_retrieve_relevance_is_the_true_top_score_not_the_routing_prior():
    sub = FakeSubstrate("refunds take five days")
    inv = investigate("refunds policy please", [retrieve_action(sub)], echo)
    assert inv.steps[0].relevance == pytest.approx(1 / 3)
    assert inv.steps[0].relevance != relevance_of(retrieve_action(sub), "refunds policy please")


def test_retrieve_over_an_irrelevant_store_earns_zero_confidence_and_abstains():
    sub = FakeSubstrate("the office dog is named rex")
    inv = investigate("refunds policy", [retrieve_action(sub)], echo)
    assert inv.steps[0].relevance == 0.0 and inv.confidence == 0.0 and inv.abstained


def test_retrieve_min_score_is_a_strict_floor():
    sub = FakeSubstrate("refunds take five days")
    assert retrieve_action(sub, min_score=0.5).run("refunds policy") == []
    assert retrieve_action(sub, min_score=0.4).run("refunds policy") == ["refunds take five days"]


@pytest.mark.parametrize("floor", [-1.0, -1e-9, 0.0])
def test_retrieve_excludes_a_zero_score_however_low_the_floor(floor):
    sub = FakeSubstrate("refunds take five days", "weather is sunny")
    assert retrieve_action(sub, min_score=floor).run("refunds policy") == ["refunds take five days"]
    reasoner = Reasoner(echo, substrate=sub, retrieve_min_score=floor)
    assert reasoner.ask("refunds policy").evidence == ["refunds take five days"]


@pytest.mark.parametrize("kw", [{"k": -1}, {"k": 2.0}, {"min_score": math.nan}, {"cost": -1}])
def test_retrieve_action_rejects_bad_arguments(kw):
    with pytest.raises(InvalidArgument):
        retrieve_action(FakeSubstrate(), **kw)


# -- other builders --------------------------------------------------------------------------------


def test_compute_action_calls_skill_with_question_or_bare():
    def add(q):
        return q.upper()

    def constant():
        return 42

    constant.description = "the answer"  # type: ignore[attr-defined]
    assert compute_action(add).run("hi") == ["add => HI"]
    action = compute_action(constant)
    assert action.run("anything") == ["constant => 42"] and action.description == "the answer"
    assert compute_action(add, name="upper", description="d").name == "upper"


def test_compute_action_keeps_the_original_type_error_when_the_bare_call_fails_too():
    def picky(q):
        raise TypeError("bad input type")

    with pytest.raises(TypeError, match="bad input type"):
        compute_action(picky).run("x")


def test_simulate_action_reports_the_scenario_mean_and_fails_on_nan():
    class Sim:
        def __init__(self, value):
            self.value = value

        def outcome_mean(self, field_index, scenario=None):
            return self.value

    action = simulate_action(Sim(1.23456), 2, "heatwave", description="heat")
    assert action.name == "simulate:heatwave" and action.kind == "simulate" and action.cost == 2.0
    assert action.run("q") == ["under scenario 'heatwave', mean of field 2 = 1.235"]
    inv = investigate("heat", [simulate_action(Sim(math.nan), 0, "s", description="heat")], echo)
    assert inv.steps[0].failed


def test_create_action_reports_guarantee_len_or_repr():
    class Model:
        guarantee = "coverage 0.9"

        def why(self):
            return "conformal"

    assert create_action(lambda q: Model()).run("q") == ["create => built Model (guarantee coverage 0.9). conformal"]
    assert create_action(lambda q: [1, 2, 3]).run("q") == ["create => built an artifact (3 rows/items)"]
    assert create_action(lambda q: 7).run("q") == ["create => built 7"]
    assert create_action(lambda q: 7, report=lambda a: f"seven={a}").run("q") == ["seven=7"]
    assert create_action(lambda q: None).run("q") == []
    assert create_action(lambda q: 1).cost == 4.0


def test_delegate_action_tags_priced_calls():
    assert delegate_action(lambda q: "ok").run("q") == ["delegate (priced) => ok"]
    assert delegate_action(lambda q: "ok", priced=False).run("q") == ["delegate => ok"]
    assert delegate_action(lambda q: "ok").cost == 8.0 and delegate_action(lambda q: "ok").kind == "delegate"
