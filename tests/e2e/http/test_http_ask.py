"""POST /v1/ask: an answer made of cited sentences, each from its own item, or an abstention with nothing cited."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from service.http.app import create_app
from service.retrieval.grounded import DEFAULT_FLOOR
from service.teams.tokens import create_token

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette asks for httpx2; the httpx transport works the same here
    from fastapi.testclient import TestClient

ABSTRACTS = [
    "Aspirin irreversibly inhibits platelet cyclooxygenase. Low-dose aspirin reduces the risk of myocardial "
    "infarction in men.",
    "Statins lower LDL cholesterol by inhibiting HMG-CoA reductase. Statin therapy reduces cardiovascular events.",
    "Metformin improves insulin sensitivity in patients with type 2 diabetes. Lactic acidosis is rare.",
]


@pytest.fixture
def client(store: Any) -> Iterator[tuple[Any, list[str]]]:
    ids = [store.add("text", text, scope="sci") for text in ABSTRACTS]
    headers = {"Authorization": f"Bearer {create_token(store, 'sci')[1]}"}
    with TestClient(create_app(store), headers=headers) as c:
        yield c, ids


def test_an_off_topic_question_abstains_with_no_answer_and_no_citations(client: Any) -> None:
    c, _ = client
    r = c.post("/v1/ask", json={"question": "What is the capital of France?"})
    assert r.status_code == 200
    out = r.json()
    assert out["abstained"] is True and out["answer"] is None
    assert out["citations"] == [] and out["sentences"] == [] and out["confidence"] < DEFAULT_FLOOR


def test_a_corpus_sentence_is_answered_by_sentences_each_citing_its_item(client: Any, store: Any) -> None:
    c, ids = client
    r = c.post("/v1/ask", json={"question": "Statins lower LDL cholesterol by inhibiting HMG-CoA reductase."})
    assert r.status_code == 200
    out = r.json()
    assert out["abstained"] is False and out["confidence"] >= DEFAULT_FLOOR
    assert out["sentences"] and out["answer"] == " ".join(s["text"] for s in out["sentences"])
    for s in out["sentences"]:
        assert s["text"] in store.get(s["item_id"]).text and s["support"] >= DEFAULT_FLOOR
    assert "Statins lower LDL cholesterol by inhibiting HMG-CoA reductase." in out["answer"]
    assert {cit["id"] for cit in out["citations"]} == {s["item_id"] for s in out["sentences"]} == {ids[1]}


def test_the_floor_is_the_callers_to_lower(client: Any) -> None:
    c, ids = client
    question = {"question": "Does aspirin cure France?"}
    assert c.post("/v1/ask", json=question).json()["abstained"] is True
    out = c.post("/v1/ask", json={**question, "min_confidence": 0.0}).json()
    assert out["abstained"] is False and [cit["id"] for cit in out["citations"]] == [ids[0]]
    assert c.post("/v1/ask", json={**question, "min_confidence": 1.5}).status_code == 422
