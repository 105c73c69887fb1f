"""Entity linking, typed triple retrieval with ontology filtering, and the KG action."""

from __future__ import annotations

import pytest

from service.domain.validation import InvalidArgument
from service.reasoning.act import investigate, score_action
from service.reasoning.kg import kg_action, link_entities, retrieve_triples

TRIPLES = [
    ("ada", "lives_in", "new york city"),
    ("bob", "lives_in", "york"),
    ("ada", "works_at", "acme"),
    ("acme", "located_in", "paris"),
]


def test_link_entities_prefers_the_longest_name_and_claims_its_span():
    entities = ["york", "new york city", "ada"]
    assert link_entities("Does Ada live in New York City?", entities) == ["new york city", "ada"]
    assert link_entities("Who lives in York?", entities) == ["york"]


def test_link_entities_orders_by_name_length_then_as_given():
    # Match order: longest name first (in characters); names of one length keep the order they were given in.
    assert link_entities("ada met bob", ["bob", "ada"]) == ["bob", "ada"]
    assert link_entities("ada met bob in manhattan, new york", ["new york", "manhattan", "ada"]) == [
        "manhattan",
        "new york",
        "ada",
    ]


def test_link_entities_matches_whole_tokens_only():
    assert link_entities("adaptive systems", ["ada"]) == []


def test_retrieve_triples_returns_facts_touching_a_linked_entity():
    out = retrieve_triples(TRIPLES, "where does ada work")
    assert out["entities"] == ["ada"]
    assert out["facts"] == [TRIPLES[0], TRIPLES[2]]
    assert out["rejected"] == []


def test_retrieve_triples_caps_at_k_and_k_zero_returns_nothing():
    assert retrieve_triples(TRIPLES, "ada", k=1)["facts"] == [TRIPLES[0]]
    assert retrieve_triples(TRIPLES, "ada", k=0)["facts"] == []


@pytest.mark.parametrize("k", [-1, 1.0, True, "2"])
def test_k_must_be_an_exact_non_negative_int(k):
    with pytest.raises(InvalidArgument):
        retrieve_triples(TRIPLES, "ada", k=k)
    with pytest.raises(InvalidArgument):
        kg_action(TRIPLES, k=k)


@pytest.mark.parametrize("bad", [[("a", "b")], [("a", "b", "c", "d")], ["abc"], [5]])
def test_triples_of_the_wrong_arity_are_rejected_at_the_boundary(bad):
    with pytest.raises(InvalidArgument):
        retrieve_triples(bad, "a")
    with pytest.raises(InvalidArgument):
        kg_action(bad)


def test_a_one_shot_generator_is_materialized_once_for_every_later_run():
    action = kg_action(t for t in TRIPLES)
    assert action.run("ada") == ["ada lives_in new york city", "ada works_at acme"]
    assert action.run("ada") == ["ada lives_in new york city", "ada works_at acme"]


def test_mapping_ontology_rejects_schema_violations_with_named_reasons():
    schema = {"lives_in": ("person", "city"), "works_at": ("person", "org")}
    types = {"ada": "person", "new york city": "city", "acme": "city"}
    out = retrieve_triples(TRIPLES, "ada", ontology=schema, types=types)
    assert out["facts"] == [TRIPLES[0]]
    (rejected,) = out["rejected"]
    assert rejected["triple"] == TRIPLES[2]
    assert "needs 'org'" in rejected["reasons"][0]
    unknown = retrieve_triples([("ada", "likes", "acme")], "ada", ontology=schema, types=types)
    assert unknown["rejected"][0]["reasons"] == ["unknown relation 'likes'"]


def test_object_ontologies_are_duck_typed():
    class Checker:
        def check_triple(self, head, relation, tail, types):
            return "no employment facts" if relation == "works_at" else None

    class Filter:
        def filter_triples(self, triples, types):
            return [t for t in triples if t[1] != "lives_in"], [
                {"triple": t, "reasons": ["x"]} for t in triples if t[1] == "lives_in"
            ]

    assert retrieve_triples(TRIPLES, "ada", ontology=Checker())["facts"] == [TRIPLES[0]]
    assert retrieve_triples(TRIPLES, "ada", ontology=Filter())["facts"] == [TRIPLES[2]]
    with pytest.raises(InvalidArgument):
        retrieve_triples(TRIPLES, "ada", ontology=42)


def test_kg_action_yields_nothing_when_nothing_links():
    assert kg_action(TRIPLES).run("what is the weather") == []


def test_kg_action_relevance_covers_the_whole_entity_inventory():
    many = [(f"e{i}", "rel", f"f{i}") for i in range(40)] + [("zeta", "rel", "omega")]
    action = kg_action(many)
    assert action.kind == "retrieve" and action.base_score == 0.0
    assert score_action(action, "tell me about zeta") > 0.0
    assert score_action(action, "tell me about weather") == 0.0


def test_kg_action_feeds_typed_facts_to_investigate():
    inv = investigate("where is acme located", [kg_action(TRIPLES, description="company locations")], lambda q, c: c)
    assert "acme located_in paris" in inv.evidence and not inv.abstained
