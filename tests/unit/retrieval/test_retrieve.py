"""Cross-kind retrieve(): validated k and weights, diversified/flat merges, aligned hits, and to_context packing."""

from __future__ import annotations

import uuid

import pytest

from service.domain.items import SubstrateItem
from service.retrieval.context import ContextBudget, ContextPacket
from service.retrieval.retrieve import Retrieval, RetrievedHit, retrieve
from tests.unit.fakes import BrokenTelemetry, FakeSubstrate, Recorder


def _uid(prefix="i"):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _shard():
    return FakeSubstrate(
        [
            SubstrateItem("text", "pricing model error in checkout totals", id=_uid("t")),
            SubstrateItem("text", "checkout pricing documentation overview", id=_uid("t")),
            SubstrateItem("text", "checkout pricing faq for customers", id=_uid("t")),
            SubstrateItem("artifact", "pricing regressor model", id=_uid("a")),
            SubstrateItem("trace", "checkout call trace", id=_uid("r")),
        ]
    )


@pytest.mark.parametrize("bad", [True, 2.0, 1.5, -1, "3", None])
def test_k_must_be_an_exact_non_negative_int_checked_before_any_search(bad):
    s = _shard()
    with pytest.raises(ValueError):
        retrieve(s, "pricing", k=bad)
    assert s.searches == []


@pytest.mark.parametrize("bad", [-0.5, float("nan"), float("inf"), True, "2"])
def test_weights_must_be_finite_and_non_negative_checked_before_any_search(bad):
    s = _shard()
    with pytest.raises(ValueError):
        retrieve(s, "pricing", weights={"artifact": bad})
    assert s.searches == []


def test_unknown_kinds_in_kinds_or_weights_are_rejected():
    with pytest.raises(ValueError):
        retrieve(_shard(), "pricing", kinds=["document"])
    with pytest.raises(ValueError):
        retrieve(_shard(), "pricing", weights={"document": 1.0})
    with pytest.raises(TypeError):
        retrieve(_shard(), "pricing", diversify="no")


def test_k_zero_returns_nothing():
    assert len(retrieve(_shard(), "pricing", k=0)) == 0


@pytest.mark.parametrize("diversify", [True, False])
def test_k_bounds_the_result_the_same_way_on_both_merge_paths(diversify):
    for k in range(0, 7):
        r = retrieve(_shard(), "checkout pricing model", k=k, diversify=diversify)
        assert len(r) == min(k, 5)
        assert len({i.id for i in r.items}) == len(r)


def test_diversified_merge_spans_kinds_before_depth():
    r = retrieve(_shard(), "checkout pricing model", k=3)
    assert r.kinds() == ["artifact", "text", "trace"]


def test_flat_merge_is_a_score_ordered_top_k():
    r = retrieve(_shard(), "checkout pricing model", k=3, diversify=False)
    assert r.scores == sorted(r.scores, reverse=True)
    assert all(i.kind == "text" for i in r.items[:2])


def test_weights_multiply_scores_and_can_promote_a_kind():
    r = retrieve(_shard(), "checkout pricing model", k=2, diversify=False, weights={"artifact": 10.0})
    assert r.items[0].kind == "artifact"
    assert r.scores[0] == pytest.approx(10.0 * 2 / 3)


def test_kinds_and_scope_restrict_the_search():
    s = _shard()
    s._items["x"] = SubstrateItem("text", "pricing in team scope", scope="team-a", id="x")
    r = retrieve(s, "pricing", kinds=["text"], scope="team-a")
    assert [i.id for i in r.items] == ["x"]
    assert {q[2] for q in s.searches} == {"text"} and {q[3] for q in s.searches} == {"team-a"}


def test_retrieval_is_built_from_aligned_validated_pairs():
    item = SubstrateItem("text", "a", id=_uid())
    with pytest.raises(ValueError):
        Retrieval("q", [item], [])
    with pytest.raises(ValueError):
        Retrieval("q", [item], [float("nan")])
    with pytest.raises(ValueError):
        RetrievedHit(item, float("inf"))
    r = Retrieval("q", [item], [1])
    assert r.hits == (RetrievedHit(item, 1.0),)
    with pytest.raises(AttributeError):
        r.items = []  # type: ignore[misc]
    r.items.append(item)  # a derived copy: the retrieval itself is unchanged
    assert len(r) == 1


def test_top_shares_the_exact_count_contract():
    r = retrieve(_shard(), "checkout pricing", k=4)
    assert r.top(2) == r.items[:2]
    assert r.top(0) == []
    for bad in (-1, True, 1.0):
        with pytest.raises(ValueError):
            r.top(bad)


def test_provenance_and_by_kind():
    r = retrieve(_shard(), "checkout pricing model", k=5)
    prov = r.provenance()
    assert [p["id"] for p in prov] == [i.id for i in r.items]
    assert set(prov[0]) == {"id", "kind", "source", "score"}
    assert sum(len(v) for v in r.by_kind().values()) == len(r)


def test_to_context_keeps_this_retrievals_order_and_scores():
    r = retrieve(_shard(), "checkout pricing model", k=3, diversify=False, weights={"artifact": 50.0})
    p = r.to_context(budget=ContextBudget(max_chars=2000))
    assert isinstance(p, ContextPacket)
    assert [i.id for i in p.items] == [i.id for i in r.items]
    assert list(p.scores) == r.scores
    assert p.task == r.query


def test_to_context_fits_the_budget_and_rejects_search_filters():
    r = retrieve(_shard(), "checkout pricing model", k=5)
    for max_chars in (40, 60, 90, 150, 400):
        for compress in (False, True):
            p = r.to_context(budget=ContextBudget(max_chars=max_chars), compress=compress)
            assert p.used_chars <= max_chars
    with pytest.raises(TypeError):
        r.to_context(kind="text")
    with pytest.raises(TypeError):
        r.to_context(compress="false")


def test_telemetry_records_a_reason_event_and_never_breaks_retrieval():
    rec = Recorder()
    r = retrieve(_shard(), "pricing", telemetry=rec)
    kind, features, choice, outcome = rec.events[-1]
    assert kind == "reason" and features["action"] == "retrieve"
    assert choice == ",".join(i.id for i in r.items)
    assert outcome["n"] == len(r)
    assert len(retrieve(_shard(), "pricing", telemetry=BrokenTelemetry())) > 0
