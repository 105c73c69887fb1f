"""Calibrated scores: an item equal to the query scores at least 0.95, one unrelated to it 0, on one scale for every
scope (docs/search.md), so floors and merges across scopes mean what they say."""

from __future__ import annotations

from service import Substrate, SubstrateItem, retrieve_action
from service.teams.spaces import Space
from tests.integration.search.test_search import CORPUS, fill


def test_a_one_item_store_scores_the_items_own_text_near_one(store: Substrate) -> None:
    store.add("text", "alpha beta", id="only")
    (item, score), *_ = store.search("alpha beta", k=1)
    assert item.id == "only" and score >= 0.95  # it was 0.45: BM25 saturation put a ceiling under 1
    store.reindex()
    assert store.search("alpha beta", k=1)[0][1] >= 0.95


def test_every_item_of_a_fitted_domain_is_found_by_its_own_text_near_one(store: Substrate) -> None:
    fill(store)
    store.add("record", payload={"topic": "inflation report", "rate": 4.5}, tags=["finance"], id="rec")
    store.reindex()
    store.add("text", "Coral reefs bleach when the ocean warms", id="tail")  # not indexed yet: the tail
    for i, text in enumerate(CORPUS):
        (item, score), *_ = store.search(text, k=1)
        assert item.id == f"doc-{i}" and score >= 0.95, (text, item.id, score)
    (item, score), *_ = store.search('{"rate": 4.5, "topic": "inflation report"} finance', k=1)
    assert item.id == "rec" and score >= 0.95
    (item, score), *_ = store.search({"rate": 4.5, "topic": "inflation report"}, k=1)
    assert item.id == "rec" and score > 0.5
    (item, score), *_ = store.search("Coral reefs bleach when the ocean warms", k=1)
    assert item.id == "tail" and score >= 0.95


def _lexemes(store: Substrate, text: str) -> set[str]:
    with store.engine.connect() as c:
        return set(c.exec_driver_sql("SELECT lexeme FROM unnest(to_tsvector('english', %s))", (text,)).scalars())


def test_items_sharing_nothing_with_the_query_score_zero(store: Substrate) -> None:
    fill(store)
    store.reindex()  # with the embedding: its cosines under the floor count nothing
    hits = store.search("quasar telescope nebula", k=5)  # no term of the domain: no lexical, no embedding
    assert [s for _, s in hits] == [0.0] * 5
    for query in ("glaciers and sea levels", "cocoa butter eggs", "interest rates", "football team olympic"):
        terms = _lexemes(store, query)
        scored = [(item, s) for item, s in store.search(query, k=len(CORPUS)) if s > 0]
        assert scored and all(_lexemes(store, item.text) & terms for item, _ in scored), (query, scored)


def test_scores_from_different_scopes_are_on_one_scale(store: Substrate) -> None:
    # A large scope with many partial matches of the query, a tiny one holding the query's own text: merged by
    # score, the exact match comes first, as its score says, whatever the sizes and statistics of the scopes.
    fill(store, scope="team-a")
    store.put_many(
        SubstrateItem(kind="text", text=f"Tidal tidal tidal report {i} on energy", scope="team-a") for i in range(30)
    )
    store.add("text", "Tidal energy from ocean currents", scope="public", id="exact")
    store.add("text", "Notes on the harbour", scope="public")
    store.reindex()
    team = Space(store, "team-a")
    hits = team.retrieve("Tidal energy from ocean currents", k=5, diversify=False)
    assert hits.items[0].id == "exact" and hits.scores[0] >= 0.95
    assert all(s < hits.scores[0] for s in hits.scores[1:])
    small, big = store.search("tidal energy", k=1, scope="public"), store.search("tidal energy", k=1, scope="team-a")
    assert 0 < big[0][1] <= 1 and 0 < small[0][1] <= 1


def test_a_score_floor_means_the_same_in_every_store(store: Substrate) -> None:
    store.add("text", "Aspirin lowers the risk of a second heart attack", id="a")
    fill(store)
    strict = retrieve_action(store, min_score=0.95)
    assert strict.run("Aspirin lowers the risk of a second heart attack") == [
        "Aspirin lowers the risk of a second heart attack"
    ]
    assert strict.run("aspirin dosage for children") == []  # a partial match is not near-identical evidence
    assert retrieve_action(store, min_score=0.1).run("aspirin dosage for children")
