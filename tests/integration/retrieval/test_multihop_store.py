"""multihop() on a real store: a chain starts from the item that names the query's words, then follows lineage."""

from __future__ import annotations

from service import SubstrateItem, multihop


def _lineage(store):  # type: ignore[no-untyped-def]
    store.put(SubstrateItem("trace", "lineage record alpha bravo charlie", id="trc_x"))
    store.put(SubstrateItem("artifact", "pricing widget gizmo regressor", links=["trc_x"], id="art_x"))
    store.put(SubstrateItem("text", "users report the checkout price is wrong at volume", links=["art_x"], id="doc_x"))


def test_a_stem_only_match_is_reached_along_its_edge_not_seeded(store) -> None:  # type: ignore[no-untyped-def]
    _lineage(store)
    # Search matches the artifact too ("pricing" stems to "price"), but it names none of the query's words.
    assert "art_x" in [it.id for it, score in store.search("checkout price is wrong", k=3) if score > 0]
    chain = multihop(store, "checkout price is wrong", max_hops=2, seeds=2, branch=2)
    assert [(s.item.id, s.via, s.depth, s.parent_id) for s in chain.steps] == [
        ("doc_x", "seed", 0, None),
        ("art_x", "link", 1, "doc_x"),
        ("trc_x", "link", 2, "art_x"),
    ]
    assert [it.id for it in chain.path_to("trc_x")] == ["doc_x", "art_x", "trc_x"]


def test_an_item_naming_a_query_word_still_seeds(store) -> None:  # type: ignore[no-untyped-def]
    _lineage(store)
    chain = multihop(store, "pricing regressor", max_hops=1, seeds=2, branch=2)
    assert [(s.item.id, s.via) for s in chain.steps][:1] == [("art_x", "seed")]


def test_a_word_form_of_a_query_word_seeds(store) -> None:  # type: ignore[no-untyped-def]
    # "refunds" extends "refund" (4+ letters): the item names the query's word in another form, so it seeds.
    refund = store.put(SubstrateItem("text", "A refund is issued within 30 days of purchase."))
    store.put(SubstrateItem("text", "Shipping takes one week."))
    chain = multihop(store, "How are refunds handled?", max_hops=1, seeds=2, branch=1)
    assert [(s.item.id, s.via) for s in chain.steps][:1] == [(refund, "seed")]
