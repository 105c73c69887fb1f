"""`ask`: every answer sentence is cited to the item it came from; off-topic questions abstain."""

from __future__ import annotations

import math

import pytest

from service.domain.validation import InvalidArgument
from service.retrieval.grounded import DEFAULT_FLOOR, ask

ABSTRACTS = [
    "Aspirin irreversibly inhibits platelet cyclooxygenase. Low-dose aspirin reduces the risk of myocardial "
    "infarction in men.",
    "Statins lower LDL cholesterol by inhibiting HMG-CoA reductase. Statin therapy reduces cardiovascular events.",
    "Vitamin D supplementation did not reduce fracture risk in elderly women. Serum calcium was unchanged.",
    "Metformin improves insulin sensitivity in patients with type 2 diabetes. Lactic acidosis is rare.",
]


@pytest.fixture
def sci(store):  # type: ignore[no-untyped-def]
    return store, [store.add("text", text, scope="sci") for text in ABSTRACTS]


def test_a_claim_from_the_corpus_is_answered_and_every_sentence_is_cited_to_its_item(sci) -> None:  # type: ignore[no-untyped-def]
    store, ids = sci
    result = ask(store, "Aspirin inhibits platelet cyclooxygenase and reduces myocardial infarction.", scope="sci")
    assert not result.answer.abstained and result.answer.confidence >= DEFAULT_FLOOR
    assert result.sentences and all(s.item_id == ids[0] for s in result.sentences)
    for s in result.sentences:  # each sentence is word for word in the item it cites
        assert s.text in store.get(s.item_id).text and s.support >= DEFAULT_FLOOR
    assert result.answer.answer == " ".join(s.text for s in result.sentences)
    assert result.answer.confidence == round(max(s.support for s in result.sentences), 4)
    out = result.as_dict()
    assert [c["id"] for c in out["citations"]] == [ids[0]] and out["sentences"][0]["item_id"] == ids[0]
    assert [i.id for i in result.answer.evidence] == [ids[0]]


def test_sentences_from_two_items_each_cite_their_own(sci) -> None:  # type: ignore[no-untyped-def]
    store, ids = sci
    result = ask(
        store,
        "Statins lower LDL cholesterol by inhibiting HMG-CoA reductase; metformin improves insulin sensitivity in "
        "type 2 diabetes.",
        scope="sci",
        min_confidence=0.2,
    )
    assert {s.item_id for s in result.sentences} == {ids[1], ids[3]}
    for s in result.sentences:
        assert s.text in store.get(s.item_id).text
    assert {c["id"] for c in result.as_dict()["citations"]} == {ids[1], ids[3]}


def test_off_topic_questions_abstain(sci) -> None:  # type: ignore[no-untyped-def]
    store, _ = sci
    for question in ("What is the capital of France?", "Who won the 2018 world cup?", "Does aspirin cure France?"):
        result = ask(store, question, scope="sci")
        assert result.answer.abstained and result.answer.answer is None and result.sentences == [], question
        assert result.answer.confidence < DEFAULT_FLOOR and "escalate" in result.answer.note
        assert result.as_dict()["citations"] == []


def test_a_sentence_below_the_floor_is_not_used(sci) -> None:  # type: ignore[no-untyped-def]
    store, ids = sci
    question = "Does aspirin cure France?"  # one of its three content terms is in the store
    relaxed = ask(store, question, scope="sci", min_confidence=0.0)
    assert relaxed.sentences and all(0 < s.support < DEFAULT_FLOOR for s in relaxed.sentences)
    assert relaxed.sentences[0].item_id == ids[0] and not relaxed.answer.abstained
    strict = ask(store, question, scope="sci")
    assert strict.answer.abstained and strict.answer.confidence == relaxed.answer.confidence


def test_an_empty_scope_abstains_with_no_confidence(sci) -> None:  # type: ignore[no-untyped-def]
    store, _ = sci
    result = ask(store, "Aspirin inhibits platelet cyclooxygenase.", scope="elsewhere")
    assert result.answer.abstained and result.answer.confidence == 0.0 and result.sentences == []


@pytest.mark.parametrize("floor", [-0.1, 1.5, math.nan, math.inf])
def test_a_floor_outside_0_1_is_refused_by_name(sci, floor: float) -> None:  # type: ignore[no-untyped-def]
    store, _ = sci
    with pytest.raises(InvalidArgument, match="min_confidence"):
        ask(store, "aspirin", scope="sci", min_confidence=floor)


def test_a_sentence_two_items_hold_is_said_once(sci) -> None:  # type: ignore[no-untyped-def]
    store, ids = sci
    copy = store.add("text", "Aspirin irreversibly inhibits platelet cyclooxygenase. Reviewed in 2020.", scope="sci")
    result = ask(store, "Aspirin irreversibly inhibits platelet cyclooxygenase.", scope="sci")
    said = [s.text for s in result.sentences]
    assert said.count("Aspirin irreversibly inhibits platelet cyclooxygenase.") == 1
    assert {s.item_id for s in result.sentences} <= {ids[0], copy}
