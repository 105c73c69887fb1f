"""answer_from_substrate(): cited answers, abstention without fabrication, and gating on delivered evidence."""

from __future__ import annotations

import json

import pytest

from service.domain.items import SubstrateItem
from service.retrieval.answer import Answer, answer_from_substrate
from service.retrieval.context import ContextBudget, ContextPacket
from tests.unit.fakes import FakeSubstrate, Recorder


def first_line(_question, context):
    lines = [ln for ln in context.split("\n") if ln.strip() and not ln.startswith("#")]
    return lines[0] if lines else "(none)"


def fabricator(_question, _context):
    raise AssertionError("the answerer must not be called when abstaining")


def _refunds():
    return FakeSubstrate(
        [
            SubstrateItem("text", "the refund policy allows returns within 30 days of purchase", id="r1"),
            SubstrateItem("text", "refunds for defective items are processed immediately", id="r2"),
        ]
    )


def _five():
    return FakeSubstrate(
        [
            SubstrateItem("text", f"widget policy alpha beta gamma document number {i} " + "filler " * 40, id=f"w{i}")
            for i in range(5)
        ]
    )


QUERY = "widget policy alpha beta gamma document"


def test_covered_question_is_answered_with_citations():
    a = answer_from_substrate(_refunds(), "refund policy returns", first_line, budget=ContextBudget(max_chars=300))
    assert isinstance(a, Answer) and not a.abstained
    assert a.answer and "refund" in a.answer
    assert a.citations() and a.citations()[0]["id"] == "r1"
    assert 0.0 < a.confidence <= 1.0
    assert [i.id for i in a.evidence] == [i.id for i in a.context.items]


def test_thin_evidence_abstains_without_calling_the_answerer():
    a = answer_from_substrate(_refunds(), "airspeed unladen swallow", fabricator)
    assert a.abstained and a.answer is None and "abstained" in a.note
    assert a.evidence == []
    b = answer_from_substrate(_refunds(), "refund policy zebra", fabricator, min_confidence=0.9)
    assert b.abstained


def test_min_evidence_gates_on_what_survives_budgeting():
    a = answer_from_substrate(
        _five(),
        QUERY,
        fabricator,
        budget=ContextBudget(max_chars=400),
        min_evidence=3,
        min_confidence=0.0,
        compress=False,
    )
    assert a.context.n_candidates == 5
    assert len(a.context.items) == 1
    assert a.abstained and a.answer is None
    assert [i.id for i in a.evidence] == [i.id for i in a.context.items]


def test_min_evidence_passes_when_enough_evidence_is_delivered():
    a = answer_from_substrate(
        _five(),
        QUERY,
        first_line,
        budget=ContextBudget(max_chars=1300),
        min_evidence=3,
        min_confidence=0.0,
        compress=False,
    )
    assert len(a.context.items) == 3 and not a.abstained
    assert len(a.evidence) == 3


def test_the_answerer_receives_exactly_the_packet_rendering():
    seen = []

    def spy(question, context):
        seen.append((question, context))
        return "ok"

    a = answer_from_substrate(_refunds(), "refund policy", spy, budget=ContextBudget(max_chars=200))
    assert seen == [("refund policy", a.context.render())]
    assert a.context.used_chars <= 200


def test_multihop_answers_over_a_lineage_chain():
    s = FakeSubstrate(
        [
            SubstrateItem("trace", "lineage zeta eta theta", id="t1"),
            SubstrateItem("artifact", "pricing model regressor", links=["t1"], id="a1"),
            SubstrateItem("text", "the checkout price is sometimes wrong", links=["a1"], id="d1"),
        ]
    )
    a = answer_from_substrate(s, "checkout price wrong", first_line, hops=2, budget=ContextBudget(max_chars=400))
    assert not a.abstained
    assert len({i.kind for i in a.evidence}) >= 2


def test_answerer_returning_none_is_an_abstention_and_non_str_is_rejected():
    a = answer_from_substrate(_refunds(), "refund policy", lambda q, c: None)
    assert a.abstained and a.answer is None
    with pytest.raises(TypeError):
        answer_from_substrate(_refunds(), "refund policy", lambda q, c: 42)


@pytest.mark.parametrize(
    "kw",
    [
        {"hops": 0},
        {"hops": True},
        {"min_evidence": -1},
        {"min_evidence": 1.5},
        {"min_confidence": float("nan")},
        {"min_confidence": 1.5},
        {"compress": "yes"},
        {"budget": 500},
    ],
)
def test_arguments_are_validated(kw):
    with pytest.raises(ValueError):
        answer_from_substrate(_refunds(), "refund policy", first_line, **kw)


def test_answer_invariants_and_as_dict():
    packet = ContextPacket("q")
    with pytest.raises(ValueError):
        Answer("q", "text", True, 0.5, packet)
    with pytest.raises(ValueError):
        Answer("q", None, False, 0.5, packet)
    with pytest.raises(ValueError):
        Answer("q", None, True, 1.5, packet)
    d = answer_from_substrate(_refunds(), "refund policy", first_line).as_dict()
    assert {"question", "answer", "abstained", "confidence", "note", "citations"} <= set(d)
    assert json.loads(json.dumps(d)) == d


def test_telemetry_distinguishes_answer_and_abstain():
    rec = Recorder()
    answer_from_substrate(_refunds(), "refund policy", first_line, telemetry=rec)
    answer_from_substrate(_refunds(), "refund policy zebra", fabricator, min_confidence=0.9, telemetry=rec)
    choices = [e[2] for e in rec.events if e[0] == "reason" and e[1].get("action") == "answer"]
    assert choices == ["answer", "abstain"]
