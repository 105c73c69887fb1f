"""Harness gates (schema, whitelist, guardrails, escalation), templates and the harness registry."""

from __future__ import annotations

import json
import re

import pytest

import service.reasoning.harness as harness_module
from service.domain.items import SubstrateItem
from service.domain.validation import InvalidArgument
from service.reasoning.act import Action
from service.reasoning.harness import (
    Harness,
    HarnessResult,
    find_harnesses,
    monitoring_harness,
    register_harness,
    support_triage_harness,
)
from service.reasoning.reasoner import Reasoner

SECRET = re.compile(r"sk-[A-Za-z0-9]{8,}")


@pytest.fixture(autouse=True)
def fake_redactor(monkeypatch):
    """A deterministic stand-in for the service's secret detector, so these tests pin the harness logic only."""

    def redact(text):
        n = len(SECRET.findall(text))
        return SECRET.sub("[REDACTED:key]", text), n

    monkeypatch.setattr(harness_module, "_redact", redact)


class FakeSubstrate:
    """Test double for the substrate surface: add/all plus token-overlap search."""

    def __init__(self, *texts: str) -> None:
        self.items = [SubstrateItem("text", t) for t in texts]

    def add(self, kind, text="", **kw):
        item = SubstrateItem(kind, text, **kw)
        self.items.append(item)
        return item.id

    def all(self, *, kind=None, scope=None):
        return [
            i.copy() for i in self.items if (kind is None or i.kind == kind) and (scope is None or i.scope == scope)
        ]

    def search(self, query, k=5, *, kind=None, scope=None):
        q = set(re.findall(r"[a-z0-9]+", query.lower()))
        scored = [(it, len(q & set(re.findall(r"[a-z0-9]+", it.text.lower()))) / max(len(q), 1)) for it in self.items]
        return sorted(scored, key=lambda p: -p[1])[:k]


def echo(question, context):
    return context


def act(name, kind, fragments, description="tickets", cost=1.0):
    return Action(name, kind, lambda q: list(fragments), cost=cost, description=description)


def test_schema_refuses_before_any_action_runs():
    ran = []
    reasoner = Reasoner(echo, actions=[Action("a", "compute", lambda q: ran.append(q) or ["x"], description="q")])
    harness = Harness(reasoner, name="h", validate=lambda r: "too short" if len(r) < 5 else None)
    result = harness.handle("hi")
    assert result.status == "refused" and result.reason == "schema: too short" and ran == []


def test_a_raising_validator_refuses():
    harness = Harness(Reasoner(echo), name="h", validate=lambda r: 1 / 0)
    result = harness.handle("anything")
    assert result.status == "refused" and "ZeroDivisionError" in result.reason


def test_non_string_request_is_refused():
    assert Harness(Reasoner(echo), name="h").handle(42).status == "refused"  # type: ignore[arg-type]


def test_answered_request_masks_secrets_in_request_evidence_and_answer():
    seen = []
    leaky = Action("leaky", "compute", lambda q: seen.append(q) or ["key is sk-ABCDEFGH12"], description="tickets")
    harness = Harness(Reasoner(echo, actions=[leaky]), name="h")
    result = harness.handle("tickets for sk-SECRET9999")
    assert result.status == "answered"
    assert seen == ["tickets for [REDACTED:key]"]
    assert result.answer == "key is [REDACTED:key]"
    assert result.redactions == 2
    assert "sk-" not in json.dumps(result.as_dict())


def test_abstention_escalates_with_the_redacted_request_and_investigation():
    calls = []

    def escalate(request, inv):
        calls.append((request, inv))
        return "TICKET-7"

    harness = Harness(Reasoner(echo, actions=[act("empty", "compute", [])]), name="h", escalate=escalate)
    result = harness.handle("tickets for sk-SECRET9999")
    assert result.status == "escalated" and result.answer == "TICKET-7"
    ((request, inv),) = calls
    assert request == "tickets for [REDACTED:key]" and inv.question == request and inv.abstained
    assert result.investigation is inv and "abstained" in result.reason


def test_abstention_without_handler_escalates_with_no_answer():
    result = Harness(Reasoner(echo), name="h").handle("anything")
    assert result.status == "escalated" and result.answer is None


def test_failing_escalation_handler_is_reported_not_raised():
    def escalate(request, inv):
        raise RuntimeError("pager down")

    result = Harness(Reasoner(echo), name="h", escalate=escalate).handle("q")
    assert result.status == "escalated" and "pager down" in result.reason


def test_a_raising_reasoner_escalates_instead_of_dropping_the_request():
    class Broken:
        actions: list = []

        def ask(self, *a, **k):
            raise RuntimeError("boom sk-LEAKED12345")

    result = Harness(Broken(), name="h").handle("q")
    assert result.status == "escalated" and result.investigation.failed
    assert "sk-" not in result.reason and "boom" in result.reason


def test_whitelist_filters_actions_and_the_view_is_frozen_at_construction():
    reasoner = Reasoner(echo, actions=[act("c", "compute", ["c fact"]), act("d", "delegate", ["d fact"])])
    harness = Harness(reasoner, name="h", allowed_kinds=("compute",))
    reasoner.add_action(act("c2", "compute", ["late fact"], cost=0.1))
    Harness(reasoner, name="other", allowed_kinds=("delegate",))
    assert isinstance(harness.actions, tuple) and [a.name for a in harness.actions] == ["c"]
    assert [a.name for a in reasoner.actions] == ["c", "d", "c2"]
    result = harness.handle("tickets")
    assert result.answer == "c fact"
    assert [s["action"] for s in result.investigation.trace()] == ["c"]


def test_redaction_wrapper_keeps_retrieval_earned_relevance():
    sub = FakeSubstrate("tickets are answered within a day")
    harness = Harness(Reasoner(echo, substrate=sub), name="h")
    result = harness.handle("tickets answered when")
    assert result.status == "answered"
    assert result.investigation.steps[0].relevance == pytest.approx(2 / 3)


def test_redaction_wrapper_keeps_a_zero_argument_earned_relevance():
    action = Action(
        "r", "retrieve", run=lambda q: ["tickets fact"], description="tickets", earned_relevance=lambda: 0.9
    )
    result = Harness(Reasoner(echo, actions=[action]), name="h").handle("tickets")
    assert result.status == "answered"
    assert result.investigation.steps[0].relevance == pytest.approx(0.9)


def test_on_result_sees_every_result_and_its_failure_is_swallowed():
    seen = []
    harness = Harness(Reasoner(echo), name="h", on_result=lambda r: seen.append(r.status))
    harness.handle("q")
    assert seen == ["escalated"]

    def broken(r):
        raise RuntimeError("ui down")

    assert Harness(Reasoner(echo), name="h", on_result=broken).handle("q").status == "escalated"


def test_harness_rejects_bad_configuration():
    with pytest.raises(InvalidArgument):
        Harness(Reasoner(echo), name="")
    with pytest.raises(InvalidArgument):
        Harness(Reasoner(echo), name="h", allowed_kinds="retrieve")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument):
        HarnessResult("maybe")


def test_support_triage_is_retrieve_only_and_refuses_empty_or_oversized_requests():
    sub = FakeSubstrate("password resets are done from the account page")
    harness = support_triage_harness(sub, echo, max_chars=40)
    assert {a.kind for a in harness.actions} == {"retrieve"}
    assert harness.handle("   ").status == "refused"
    assert harness.handle("x" * 41).status == "refused"
    answered = harness.handle("password resets account page")
    assert answered.status == "answered" and "account page" in answered.answer
    assert harness.handle("refund for order 66").status == "escalated"


def test_monitoring_harness_allows_checks_and_what_ifs_but_no_delegation():
    reasoner = Reasoner(
        echo,
        actions=[
            act(n, k, ["x"]) for n, k in [("c", "compute"), ("s", "simulate"), ("d", "delegate"), ("m", "create")]
        ],
    )
    assert [a.kind for a in monitoring_harness(reasoner).actions] == ["compute", "simulate"]


def test_register_and_find_harnesses_by_query_and_scope():
    sub = FakeSubstrate()
    triage = support_triage_harness(sub, echo)
    hid = register_harness(sub, triage, scope="team-a")
    register_harness(sub, monitoring_harness(Reasoner(echo)), scope="team-b")
    (manifest,) = find_harnesses(sub, "support questions")
    assert manifest["id"] == hid and manifest["harness"] == "support-triage" and manifest["scope"] == "team-a"
    assert manifest["allowed_kinds"] == ["retrieve"] and manifest["actions"][0]["kind"] == "retrieve"
    assert [m["harness"] for m in find_harnesses(sub, scope="team-b")] == ["monitoring"]
    assert len(find_harnesses(sub)) == 2 and find_harnesses(sub, "zebra") == []


def test_an_unrestricted_harness_registers_allowed_kinds_as_none():
    sub = FakeSubstrate()
    register_harness(sub, Harness(Reasoner(echo), name="open"))
    assert find_harnesses(sub)[0]["allowed_kinds"] is None


def test_real_security_module_masks_secrets(monkeypatch):
    security = pytest.importorskip("service.guard.secrets")
    if not hasattr(security, "detect_secrets"):
        pytest.skip("service.guard.secrets has no detector yet")
    monkeypatch.undo()
    token = "ghp_" + "a1B2c3D4e5" * 4
    leaky = Action("leaky", "compute", lambda q: [f"token={token}"], description="tickets")
    result = Harness(Reasoner(echo, actions=[leaky]), name="h").handle("tickets")
    assert token not in (result.answer or "") and result.redactions >= 1
