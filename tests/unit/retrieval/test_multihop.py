"""multihop(): seeds over min_score, link-then-content hops, caps, scope isolation, and the evidence path."""

from __future__ import annotations

import pytest

from service.domain.items import SubstrateItem
from service.retrieval.context import ContextBudget, ContextPacket
from service.retrieval.multihop import HopChain, HopStep, multihop
from tests.unit.fakes import FakeSubstrate, Recorder


def _lineage():
    return FakeSubstrate(
        [
            SubstrateItem("trace", "lineage zeta eta theta", id="t1"),
            SubstrateItem("artifact", "pricing model regressor", links=["t1"], id="a1"),
            SubstrateItem("text", "the checkout price is sometimes wrong", links=["a1"], id="d1"),
            SubstrateItem("text", "price wrong again at checkout today", id="d2"),
            SubstrateItem("text", "unrelated gardening notes", id="g1"),
        ]
    )


@pytest.mark.parametrize("name", ["max_hops", "seeds", "branch", "max_items"])
def test_counts_reject_non_ints_with_type_error_and_negatives_with_value_error(name):
    for bad in (True, 1.5, "2"):
        with pytest.raises(TypeError):
            multihop(_lineage(), "checkout", **{name: bad})
    with pytest.raises(ValueError):
        multihop(_lineage(), "checkout", **{name: -1})


def test_min_score_must_be_finite():
    with pytest.raises(ValueError):
        multihop(_lineage(), "checkout", min_score=float("nan"))


def test_seeds_must_score_strictly_above_min_score():
    chain = multihop(_lineage(), "checkout price wrong", max_hops=0, seeds=5, min_score=0.5)
    assert {s.item.id for s in chain.steps} == {"d1", "d2"}
    assert all(s.depth == 0 and s.via == "seed" and s.parent_id is None for s in chain.steps)
    assert multihop(_lineage(), "checkout price wrong", max_hops=0, min_score=1.0).steps == []


def test_link_hops_follow_explicit_edges_to_a_lineage_chain():
    chain = multihop(_lineage(), "checkout price wrong", seeds=1, max_hops=2, min_score=0.5)
    ids = [s.item.id for s in chain.steps]
    assert ids[0] == "d1" and "a1" in ids and "t1" in ids
    assert [i.id for i in chain.path_to("t1")] == ["d1", "a1", "t1"]
    via = {s.item.id: s.via for s in chain.steps}
    assert via["a1"] == "link" and via["t1"] == "link"
    assert chain.max_depth() == 2
    assert chain.by_depth()[0][0].id == "d1"


def test_link_hops_come_before_content_hops_at_each_depth():
    chain = multihop(_lineage(), "checkout price wrong", seeds=1, max_hops=1, branch=1, min_score=0.4)
    assert [(s.item.id, s.via) for s in chain.steps] == [("d1", "seed"), ("a1", "link"), ("d2", "content")]


def test_max_items_caps_the_whole_chain():
    for cap in range(0, 5):
        assert len(multihop(_lineage(), "checkout price wrong", seeds=3, max_items=cap)) <= cap


def test_max_hops_zero_returns_only_seeds():
    chain = multihop(_lineage(), "checkout price wrong", max_hops=0)
    assert chain.max_depth() == 0


def test_links_never_cross_the_requested_scope():
    s = FakeSubstrate(
        [
            SubstrateItem("text", "checkout price wrong", links=["secret"], scope="team-a", id="d1"),
            SubstrateItem("record", "secret other-team record", scope="team-b", id="secret"),
        ]
    )
    chain = multihop(s, "checkout price wrong", scope="team-a")
    assert [st.item.id for st in chain.steps] == ["d1"]
    assert "secret" in [st.item.id for st in multihop(s, "checkout price wrong").steps]


def test_dangling_links_are_skipped():
    s = FakeSubstrate([SubstrateItem("text", "checkout price wrong", links=["missing"], id="d1")])
    assert [st.item.id for st in multihop(s, "checkout price").steps] == ["d1"]


def test_provenance_and_path_to_unknown_item():
    chain = multihop(_lineage(), "checkout price wrong", seeds=1, min_score=0.5)
    prov = chain.provenance()
    assert set(prov[0]) == {"id", "kind", "depth", "via", "parent", "score"}
    assert prov[1]["parent"] == "d1"
    assert chain.path_to("nope") == []


def test_path_to_terminates_on_a_hand_built_cycle():
    a = SubstrateItem("text", "a", id="a")
    b = SubstrateItem("text", "b", id="b")
    chain = HopChain("q", [HopStep(a, 1, "link", "b"), HopStep(b, 1, "link", "a")])
    assert [i.id for i in chain.path_to("a")] == ["b", "a"]


def test_hop_step_validates_its_fields():
    item = SubstrateItem("text", "a", id="a")
    with pytest.raises(ValueError):
        HopStep(item, 0, "teleport", None)
    with pytest.raises(ValueError):
        HopStep(item, -1, "seed", None)
    with pytest.raises(ValueError):
        HopStep(item, 0, "seed", None, float("inf"))


def test_to_context_packs_the_chain_in_chain_order_without_searching():
    s = _lineage()
    chain = multihop(s, "checkout price wrong", seeds=1, min_score=0.5)
    n_searches = len(s.searches)
    p = chain.to_context(budget=ContextBudget(max_chars=1000))
    assert isinstance(p, ContextPacket)
    assert [i.id for i in p.items] == [i.id for i in chain.items]
    assert len(s.searches) == n_searches
    assert chain.to_context(budget=ContextBudget(max_chars=80), compress=True).used_chars <= 80
    with pytest.raises(TypeError):
        chain.to_context(scope="local")


def test_telemetry_records_the_chain():
    rec = Recorder()
    chain = multihop(_lineage(), "checkout price wrong", telemetry=rec)
    kind, features, choice, outcome = rec.events[-1]
    assert kind == "reason" and features["action"] == "multihop"
    assert choice == ",".join(i.id for i in chain.items)
    assert outcome == {"n": len(chain), "reached_depth": chain.max_depth()}
