"""Beliefs on the real log: assimilate/retract as events, verification, anti-laundering, retrieval, replay."""

from __future__ import annotations

import json
import threading

import pytest
from sqlalchemy import text

from projections.runner import rebuild, shadow_digests, table_digests
from service.beliefs.commands import (
    MODEL_ASSERTION_CAP,
    Claim,
    assimilate,
    credence_from_history,
    retract,
    retrieve_beliefs,
)
from service.domain.items import SubstrateItem
from service.domain.validation import InvalidArgument
from service.teams.access import PUBLIC, AccessPolicy


def _receipt(store, source_id: str, scope: str = "local") -> str:
    return store.add("text", f"evidence receipt {source_id}", id=source_id, scope=scope)


def _ev(source_id: str, tier: str = "real_measurement", direction: str = "+", weight: float = 1.0) -> dict:
    return {"source_id": source_id, "tier": tier, "direction": direction, "weight": weight}


def _belief_rows(store) -> dict[str, tuple]:
    with store.engine.connect() as c:
        rows = c.execute(text("SELECT id, scope, claim_key, credence, evidence::text FROM beliefs")).all()
    return {r[0]: tuple(r[1:]) for r in rows}


# ----------------------------------------------------------------- events and find-or-create
def test_assimilate_appends_evidence_events_carrying_the_belief_item(store) -> None:
    _receipt(store, "doc-1")
    b = assimilate(
        store, Claim("The rate is 5%.", {"model": "m"}), [_ev("doc-1", "held_out_truth"), _ev("m", "model_assertion")]
    )
    events = list(store.events.read(stream=b.id))
    assert [e.type for e in events] == ["EvidenceAssimilated", "EvidenceAssimilated"]
    assert [e.version for e in events] == [1, 2] and store.position == events[-1].seq
    last = events[-1].data
    assert last["item"]["kind"] == "record" and last["item"]["tags"] == ["belief"]
    assert last["item"]["payload"]["credence"] == b.credence and last["entry"]["source_id"] == "m"
    item = store.get(b.id)
    assert item is not None and item.payload["claim"]["produced_by"] == {"model": "m"}
    assert b.credence == credence_from_history(b.evidence_history) > 0.9


def test_same_normalized_claim_in_a_scope_is_one_belief(store) -> None:
    first = assimilate(store, Claim("Water boils at 100C."), _ev("m", "model_assertion"))
    again = assimilate(store, "  water BOILS at\t100c. ", _ev("m2", "model_assertion"))
    other_scope = assimilate(store, "Water boils at 100C.", _ev("m", "model_assertion"), scope="team-a")
    assert again.id == first.id and len(again.evidence_history) == 2
    assert again.claim.text == "Water boils at 100C."  # the first wording is kept
    assert other_scope.id != first.id and other_scope.scope == "team-a"
    assert len(_belief_rows(store)) == 2


def test_concurrent_assimilations_of_one_claim_all_land_on_one_belief(store) -> None:
    n = 8
    barrier = threading.Barrier(n)
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            barrier.wait()
            assimilate(store, "Concurrency is hard.", _ev(f"m-{i}", "model_assertion"))
        except BaseException as exc:  # noqa: BLE001 - surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    rows = _belief_rows(store)
    assert len(rows) == 1
    (belief_id,) = rows
    assert [e.version for e in store.events.read(stream=belief_id)] == list(range(1, n + 1))
    trail = store.get(belief_id).payload["evidence_history"]
    assert sorted(e["source_id"] for e in trail) == sorted(f"m-{i}" for i in range(n))


@pytest.mark.parametrize(
    "evidence, field",
    [
        ({"source_id": "s", "tier": "model_assertion", "direction": "positive"}, "direction"),
        ({"source_id": "s", "tier": "model_assertion", "weight": float("nan")}, "weight"),
        ({"source_id": "s", "tier": "model_assertion", "weight": -1.0}, "weight"),
        ({"source_id": "s", "tier": "model_assertion", "time": float("inf")}, "time"),
        ({"source_id": "s", "tier": "gut_feeling"}, "tier"),
        ("not evidence", "evidence"),
    ],
)
def test_bad_evidence_is_rejected_before_anything_is_written(store, evidence, field) -> None:
    with pytest.raises(ValueError, match=field):
        assimilate(store, "The bridge is closed.", evidence)
    assert store.events.head() == 0


# ----------------------------------------------------------------- verification (MXR-080-0243)
def test_strong_tier_earns_strength_only_with_a_resolving_source(store) -> None:
    _receipt(store, "genuine")
    real = assimilate(store, "Claim with a receipt.", _ev("genuine"))
    fabricated = assimilate(store, "Claim with a fabricated receipt.", _ev("no-such-item-9182"))
    missing = assimilate(store, "Claim with no receipt.", {"tier": "real_measurement"})
    assert real.credence > 0.9 and real.evidence_history[0].verified
    assert fabricated.credence <= MODEL_ASSERTION_CAP and not fabricated.evidence_history[0].verified
    assert missing.credence <= MODEL_ASSERTION_CAP and not missing.evidence_history[0].verified


# ----------------------------------------------------------------- anti-laundering (MXR-080-0244)
def test_self_citation_and_ungrounded_peers_contribute_nothing(store) -> None:
    claim = Claim("X causes Y.")
    b1 = assimilate(store, claim, _ev("self", "model_assertion"))
    b2 = assimilate(store, claim, _ev(b1.id, "held_out_truth"))
    assert b2.credence == b1.credence and b2.evidence_history[-1].weight == 0.0
    peer = assimilate(store, "Z because X causes Y.", _ev("self-2", "model_assertion"))
    laundered = assimilate(store, claim, _ev(peer.id))
    assert laundered.credence == b1.credence and laundered.evidence_history[-1].weight == 0.0
    assert len(laundered.evidence_history) == 3  # kept in the trail for audit
    record = list(store.events.read(stream=b1.id))[-1].data["entry"]
    assert record["laundered"] is True and record["claimed_weight"] == 1.0 and record["weight"] == 0.0


def test_grounded_chains_pass_but_a_closing_ring_is_rejected(store) -> None:
    _receipt(store, "ext")
    a = assimilate(store, "claim A", _ev("ext"))
    b = assimilate(store, "claim B", _ev(a.id))
    c = assimilate(store, "claim C", _ev(b.id))
    assert b.credence > 0.9 and c.credence > 0.9
    closed = assimilate(store, "claim A", _ev(c.id))
    assert closed.credence == a.credence and closed.evidence_history[-1].weight == 0.0


def test_another_scopes_private_belief_is_indistinguishable_from_nothing(store) -> None:
    _receipt(store, "a-receipt", scope="team-a")
    grounded_a = assimilate(store, "A grounded.", _ev("a-receipt"), scope="team-a")
    ungrounded_a = assimilate(store, "A asserted.", _ev("a-self", "model_assertion"), scope="team-a")
    via_y = assimilate(store, "A downstream.", _ev(grounded_a.id), scope="team-a")
    assert grounded_a.credence > 0.9 and via_y.credence > 0.9
    results = [
        assimilate(store, f"B cites {i}.", _ev(src), scope="team-b")
        for i, src in enumerate([grounded_a.id, ungrounded_a.id, via_y.id, "does-not-exist"])
    ]
    assert len({r.credence for r in results}) == 1 and results[0].credence <= MODEL_ASSERTION_CAP
    assert not any(r.evidence_history[0].verified for r in results)
    assert len({r.evidence_history[0].weight for r in results}) == 1


def test_a_read_grant_or_public_scope_restores_cross_scope_grounding(store) -> None:
    _receipt(store, "a-receipt", scope="team-a")
    a = assimilate(store, "Shared later by grant.", _ev("a-receipt"), scope="team-a")
    granted = assimilate(
        store, "B with a grant.", _ev(a.id), scope="team-b", policy=AccessPolicy().grant_read("team-b", "team-a")
    )
    assert granted.credence > 0.9 and granted.evidence_history[0].verified
    _receipt(store, "pub-receipt", scope=PUBLIC)
    pub = assimilate(store, "Publicly grounded.", _ev("pub-receipt"), scope=PUBLIC)
    assert assimilate(store, "B cites public.", _ev(pub.id), scope="team-b").credence > 0.9


# ----------------------------------------------------------------- retract
def test_retract_cascades_through_beliefs_that_lose_their_only_support(store) -> None:
    _receipt(store, "doc-1")
    _receipt(store, "doc-2")
    base = assimilate(store, "The rate is 5%.", _ev("doc-1", "held_out_truth"))
    down = assimilate(store, "Therefore the estimate holds.", _ev(base.id, "held_out_truth"))
    other = assimilate(store, "Independent claim.", [_ev("doc-2"), _ev(base.id)])
    head = store.events.head()
    changed = {b.id: b for b in retract(store, "doc-1")}
    assert set(changed) == {base.id, down.id, other.id}
    assert changed[base.id].credence == 0.5 and changed[base.id].evidence_history == []
    assert changed[down.id].credence == 0.5 and changed[down.id].evidence_history == []
    assert [e.source_id for e in changed[other.id].evidence_history] == ["doc-2"]
    assert changed[other.id].credence > 0.9
    new = list(store.events.read(since=head))
    assert {e.type for e in new} == {"EvidenceRetracted"} and all(e.data["entry"]["cause"] == "doc-1" for e in new)
    assert _belief_rows(store)[down.id][2] == 0.5
    assert retract(store, "doc-1") == []


def test_retract_stops_at_a_belief_that_keeps_independent_support(store) -> None:
    _receipt(store, "doc-1")
    _receipt(store, "doc-2")
    base = assimilate(store, "Doubly grounded.", [_ev("doc-1"), _ev("doc-2")])
    down = assimilate(store, "Rests on the doubly grounded claim.", _ev(base.id))
    changed = retract(store, "doc-1")
    assert [b.id for b in changed] == [base.id] and changed[0].credence > 0.9
    assert store.get(down.id).payload["credence"] == down.credence


def test_retract_is_limited_to_the_given_scope(store) -> None:
    _receipt(store, "shared", scope=PUBLIC)
    a = assimilate(store, "In A.", _ev("shared"), scope="team-a")
    b = assimilate(store, "In B.", _ev("shared"), scope="team-b")
    assert [x.id for x in retract(store, "shared", scope="team-a")] == [a.id]
    assert store.get(b.id).payload["credence"] == b.credence
    with pytest.raises(InvalidArgument, match="source_id"):
        retract(store, "")


# ----------------------------------------------------------------- retrieve (MXR-080-0245)
def test_qualifying_beliefs_are_not_crowded_out_by_higher_ranked_records(store) -> None:
    _receipt(store, "doc")
    store.put_many(SubstrateItem("record", f"alpha beta gamma ordinary record {i}") for i in range(120))
    for i in range(40):
        assimilate(store, f"alpha beta gamma weak belief {i}", _ev(f"m{i}", "model_assertion"))
    target = assimilate(store, "alpha is grounded", _ev("doc"))
    got = retrieve_beliefs(store, "alpha beta gamma", k=1, min_credence=0.6)
    assert [b.id for b in got] == [target.id]
    assert len(retrieve_beliefs(store, "alpha beta gamma", k=100, min_credence=0.6)) == 1


def test_ranking_is_relevance_times_credence_and_filters_apply(store) -> None:
    _receipt(store, "doc")
    low = assimilate(store, "the sky is blue", _ev("m", "model_assertion", "-"))
    high = assimilate(store, "the sky is blue today", _ev("doc"))
    assimilate(store, "the sky is blue", _ev("m", "model_assertion"), scope="team-a")
    ranked = retrieve_beliefs(store, "sky blue", k=5, scope="local")
    assert [b.id for b in ranked] == [high.id, low.id]
    assert [b.id for b in retrieve_beliefs(store, "sky blue", k=5, min_credence=0.5, scope="local")] == [high.id]
    assert len(retrieve_beliefs(store, "sky blue", k=5)) == 3
    assert retrieve_beliefs(store, "sky blue", k=0) == []
    with pytest.raises(InvalidArgument, match="min_credence"):
        retrieve_beliefs(store, "sky", min_credence=1.5)
    with pytest.raises(InvalidArgument, match="k"):
        retrieve_beliefs(store, "sky", k=-1)


def test_a_removed_or_retagged_belief_leaves_the_read_model(store) -> None:
    a = assimilate(store, "to be removed", _ev("m", "model_assertion"))
    b = assimilate(store, "to be retagged", _ev("m", "model_assertion"))
    store.remove(a.id)
    store.update(b.id, tags=["note"])
    assert _belief_rows(store) == {}
    again = assimilate(store, "to be removed", _ev("m2", "model_assertion"))
    assert again.id == a.id and [e.source_id for e in again.evidence_history] == ["m2"]


# ----------------------------------------------------------------- replay
def test_rebuild_reproduces_every_credence_exactly(store) -> None:
    _receipt(store, "doc-1")
    _receipt(store, "doc-2", scope=PUBLIC)
    base = assimilate(store, "Base.", [_ev("doc-1", "held_out_truth"), _ev("doc-2", "simulation", weight=0.6)])
    assimilate(store, "Down.", [_ev(base.id, "executable"), _ev("m", "model_assertion", "-", 2.5)])
    assimilate(store, "Ungrounded.", _ev("fake", "real_measurement"), scope="team-b")
    retract(store, "doc-1")
    before = _belief_rows(store)
    with store.engine.connect() as c:
        _, live = table_digests(c)
    _, _, shadow = shadow_digests(store.engine)
    assert shadow == live
    assert rebuild(store.engine).digests == live
    after = _belief_rows(store)
    assert after == before
    for _scope, _key, credence, trail in after.values():
        assert credence_from_history(json.loads(trail)) == credence
