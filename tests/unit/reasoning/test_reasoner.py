"""Reasoner: wiring the action space, per-call action views, policies, and verify=True receipts."""

from __future__ import annotations

import re

import pytest

from service.domain.items import SubstrateItem
from service.domain.validation import InvalidArgument
from service.reasoning.act import Action
from service.reasoning.factuality import FactualityReceipt
from service.reasoning.reasoner import Reasoner


class FakeSubstrate:
    """Test double for the substrate surface: token-overlap search over a list of items."""

    def __init__(self, *texts: str) -> None:
        self.items = [SubstrateItem("text", t) for t in texts]

    def search(self, query, k=5, *, kind=None, scope=None):
        q = set(re.findall(r"[a-z0-9]+", query.lower()))
        scored = [(it, len(q & set(re.findall(r"[a-z0-9]+", it.text.lower()))) / max(len(q), 1)) for it in self.items]
        return sorted(scored, key=lambda p: -p[1])[:k]


def echo(question: str, context: str) -> str:
    return context


def total():
    return 12


total.description = "sum of open tickets"  # type: ignore[attr-defined]


class Registry:
    def all(self):
        return [total]


def test_reasoner_builds_retrieve_plus_one_compute_per_skill():
    r = Reasoner(echo, substrate=FakeSubstrate("x y"), skills=[total])
    assert [(a.name, a.kind) for a in r.actions] == [("retrieve", "retrieve"), ("total", "compute")]
    assert [a.kind for a in Reasoner(echo, skills=Registry()).actions] == ["compute"]


def test_actions_property_is_a_copy_and_add_action_chains():
    r = Reasoner(echo)
    r.actions.append(Action("x", "compute", lambda q: []))
    assert r.actions == []
    extra = Action("sim", "simulate", lambda q: ["s"], description="tickets")
    assert r.add_action(extra) is r and r.actions == [extra]
    with pytest.raises(InvalidArgument):
        r.add_action("not an action")  # type: ignore[arg-type]


def test_ask_answers_from_a_skill_and_carries_the_trace():
    inv = Reasoner(echo, skills=[total]).ask("how many open tickets")
    assert inv.answer == "total => 12"
    assert inv.trace()[0]["action"] == "total"


def test_ask_with_actions_uses_that_view_only_and_never_touches_the_reasoner():
    own = Action("own", "compute", lambda q: ["own fact"], description="tickets")
    other = Action("other", "compute", lambda q: ["other fact"], description="tickets")
    r = Reasoner(echo, actions=[own])
    inv = r.ask("tickets", actions=(other,))
    assert inv.answer == "other fact"
    assert r.actions == [own]


def test_use_policy_routes_by_the_learned_scorer():
    a = Action("a", "compute", lambda q: ["from a"], description="tickets")
    b = Action("b", "compute", lambda q: ["from b"], description="tickets")
    r = Reasoner(echo, actions=[a, b]).use_policy(lambda action, q: 1.0 if action.name == "b" else 0.1)
    assert r.ask("tickets").answer == "from b"


def test_overrides_pass_through_to_investigate():
    inv = Reasoner(echo, skills=[total]).ask("open tickets", max_actions=0)
    assert inv.abstained and inv.steps == []
    with pytest.raises(TypeError):
        Reasoner(echo).ask("q", not_an_option=1)


def test_verify_attaches_a_factuality_receipt_to_a_non_abstained_answer():
    sub = FakeSubstrate("Refunds are processed within five business days.")
    r = Reasoner(lambda q, ctx: "Refunds are processed within five business days.", substrate=sub)
    inv = r.ask("when are refunds processed", verify=True)
    assert isinstance(inv.factuality, FactualityReceipt)
    assert inv.factuality.is_grounded()
    assert r.ask("when are refunds processed").factuality is None


def test_verify_leaves_an_abstention_without_a_receipt():
    r = Reasoner(echo, substrate=FakeSubstrate("the office dog is rex"))
    inv = r.ask("refund policy", verify=True)
    assert inv.abstained and inv.factuality is None


def test_retrieve_min_score_is_passed_to_the_retrieve_action():
    sub = FakeSubstrate("refunds take five days")
    assert Reasoner(echo, substrate=sub, retrieve_min_score=0.9).ask("refunds policy").abstained
    assert not Reasoner(echo, substrate=sub).ask("refunds policy").abstained


@pytest.mark.parametrize(
    "kw", [{"min_confidence": float("nan")}, {"budget_cost": -1.0}, {"retrieve_min_score": float("nan")}]
)
def test_reasoner_rejects_bad_configuration(kw):
    with pytest.raises(InvalidArgument):
        Reasoner(echo, substrate=FakeSubstrate(), **kw)
