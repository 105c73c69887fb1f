"""eig_retrieve(): expected-gain scoring, the positive-gain bar, copy-on-update, recorded skips, CategoricalBelief."""

from __future__ import annotations

import copy
import math
import random

import pytest

from service.domain.items import SubstrateItem
from service.reasoning.eig import (
    CategoricalBelief,
    EigRetrieval,
    EvidenceOutcome,
    EvidenceOutcomes,
    SkippedCandidate,
    eig_retrieve,
)
from service.retrieval.context import ContextPacket
from service.retrieval.retrieve import Retrieval


class FakeSubstrate:
    """A test double for the substrate's ``all`` surface (eig_retrieve never searches)."""

    def __init__(self, items=()):
        self._items = [it.copy() for it in items]

    def all(self, *, kind=None, scope=None):
        return [i.copy() for i in self._items if kind in (None, i.kind) and scope in (None, i.scope)]


def _item(name, ll, kind="record", scope="local"):
    return SubstrateItem(kind, name, payload={"ll": ll}, scope=scope, id=name)


def _ll(item):
    if "ll" not in item.payload:
        raise ValueError("no likelihood on this item")
    return item.payload["ll"]


DECISIVE = [0.0, -6.0, -6.0]
WEAK = [0.0, -0.3, -0.3]


# --- CategoricalBelief -------------------------------------------------------------------------------


def test_uniform_belief_has_log_k_entropy_and_labels():
    b = CategoricalBelief.uniform(["a", "b", "c", "d"])
    assert b.entropy() == pytest.approx(math.log(4))
    assert CategoricalBelief.uniform(3).labels is None
    assert CategoricalBelief([1.0, 0.0]).entropy() == 0.0


@pytest.mark.parametrize("bad", [[], [0.5, 0.6], [-0.1, 1.1], [float("nan"), 1.0], [True, False], "ab"])
def test_belief_rejects_invalid_probabilities(bad):
    with pytest.raises(ValueError):
        CategoricalBelief(bad)


def test_belief_rejects_bad_labels_and_uniform_sizes():
    with pytest.raises(ValueError):
        CategoricalBelief([0.5, 0.5], labels=["a"])
    with pytest.raises(ValueError):
        CategoricalBelief([0.5, 0.5], labels=["a", "a"])
    with pytest.raises(ValueError):
        CategoricalBelief.uniform(0)


def test_update_returns_the_normalized_posterior_without_mutating():
    b = CategoricalBelief.uniform(["x", "y"])
    post = b.update([math.log(3.0), 0.0])
    assert post.probs == pytest.approx((0.75, 0.25))
    assert post.map() == "x"
    assert b.probs == (0.5, 0.5)
    assert b.update([0.0, -math.inf]).probs == (1.0, 0.0)  # -inf rules a hypothesis out


@pytest.mark.parametrize("bad", [[0.0], [0.0, float("nan")], [math.inf, 0.0], [-math.inf, -math.inf], "xy"])
def test_incompatible_evidence_raises_value_error(bad):
    with pytest.raises(ValueError):
        CategoricalBelief.uniform(2).update(bad)


def test_map_without_labels_is_an_index():
    assert CategoricalBelief([0.2, 0.8]).map() == 1


# --- EvidenceOutcome(s) ------------------------------------------------------------------------------


def test_outcomes_must_be_a_non_empty_distribution():
    with pytest.raises(ValueError):
        EvidenceOutcomes([])
    with pytest.raises(ValueError):
        EvidenceOutcomes([EvidenceOutcome(0.5, WEAK), EvidenceOutcome(0.2, WEAK)])
    with pytest.raises(ValueError):
        EvidenceOutcome(-0.1, WEAK)
    with pytest.raises(ValueError):
        EvidenceOutcome(float("nan"), WEAK)
    ok = EvidenceOutcomes([EvidenceOutcome(0.5, WEAK), EvidenceOutcome(0.5, DECISIVE)])
    assert len(ok.outcomes) == 2


# --- eig_retrieve ------------------------------------------------------------------------------------


def test_picks_the_decisive_item_first_and_stops_on_redundancy():
    ruled_out = [0.0, -math.inf, -math.inf]
    s = FakeSubstrate([_item("weak", WEAK), _item("decisive", ruled_out), _item("duplicate", ruled_out)])
    r = eig_retrieve(s, CategoricalBelief.uniform(3), _ll, k=3)
    assert isinstance(r, EigRetrieval) and isinstance(r, Retrieval)
    assert [i.id for i in r.items] == ["decisive"]  # the duplicate then carries no information
    assert r.scores[0] == pytest.approx(math.log(3))
    assert r.stop_reason == "no_admissible_positive_gain"


def test_greedy_gains_shrink_as_evidence_accumulates():
    s = FakeSubstrate([_item("weak", WEAK), _item("decisive", DECISIVE), _item("duplicate", DECISIVE)])
    r = eig_retrieve(s, CategoricalBelief.uniform(3), _ll, k=3)
    assert r.items[0].id == "decisive"
    assert r.scores == sorted(r.scores, reverse=True)
    assert all(g > 0 for g in r.scores)


def test_gain_is_the_realized_entropy_reduction_for_deterministic_evidence():
    b = CategoricalBelief.uniform(3)
    r = eig_retrieve(FakeSubstrate([_item("d", DECISIVE)]), b, _ll, k=1)
    assert r.scores[0] == pytest.approx(b.entropy() - b.update(DECISIVE).entropy())


def test_stops_rather_than_pick_a_non_positive_gain():
    s = FakeSubstrate([_item("flat", [0.0, 0.0, 0.0])])
    r = eig_retrieve(s, CategoricalBelief.uniform(3), _ll)
    assert len(r) == 0
    assert r.stop_reason == "no_admissible_positive_gain"


def test_entropy_increasing_evidence_is_never_picked():
    b = CategoricalBelief([0.9, 0.05, 0.05])
    s = FakeSubstrate([_item("confusing", [-4.0, 0.0, 0.0])])
    r = eig_retrieve(s, b, _ll)
    assert len(r) == 0 and r.stop_reason == "no_admissible_positive_gain"


def test_expected_gain_averages_over_outcomes():
    b = CategoricalBelief.uniform(2)
    outcomes = EvidenceOutcomes([EvidenceOutcome(0.5, [0.0, -5.0]), EvidenceOutcome(0.5, [-5.0, 0.0])])
    item = SubstrateItem("record", "experiment", id="exp")
    r = eig_retrieve(FakeSubstrate([item]), b, lambda _: outcomes, k=1, seed=3)
    expected = b.entropy() - 0.5 * b.update([0.0, -5.0]).entropy() - 0.5 * b.update([-5.0, 0.0]).entropy()
    assert r.scores[0] == pytest.approx(expected)


def test_seed_makes_outcome_draws_reproducible():
    def fn(item):
        return EvidenceOutcomes([EvidenceOutcome(0.5, [0.0, -2.0, 0.0]), EvidenceOutcome(0.5, [-2.0, 0.0, 0.0])])

    items = [SubstrateItem("record", f"e{i}", id=f"e{i}") for i in range(4)]
    runs = [eig_retrieve(FakeSubstrate(items), CategoricalBelief.uniform(3), fn, seed=7) for _ in range(2)]
    assert runs[0].scores == runs[1].scores
    rng_run = eig_retrieve(FakeSubstrate(items), CategoricalBelief.uniform(3), fn, seed=random.Random(7))
    assert len(rng_run) >= 1
    with pytest.raises(TypeError):
        eig_retrieve(FakeSubstrate(items), CategoricalBelief.uniform(3), fn, seed="seven")


class MutatingBelief:
    """A belief whose update() breaks the contract by mutating itself (and has no copy())."""

    def __init__(self, probs):
        self.probs = list(probs)

    def entropy(self):
        return -sum(p * math.log(p) for p in self.probs if p > 0)

    def update(self, ll):
        w = [p * math.exp(x) for p, x in zip(self.probs, ll, strict=True)]
        self.probs = [x / sum(w) for x in w]
        return self


def test_caller_belief_is_never_mutated_even_by_a_self_mutating_update():
    b = MutatingBelief([0.25] * 4)
    before = copy.deepcopy(b.probs)
    s = FakeSubstrate([_item("a", [0.0, -3.0, -3.0, -3.0]), _item("b", [-3.0, 0.0, 0.0, 0.0])])
    r = eig_retrieve(s, b, _ll, k=2)
    assert b.probs == before
    assert len(r) >= 1


class SelfCopyingBelief(MutatingBelief):
    """Worse still: its copy() hands back the belief itself."""

    def copy(self):
        return self


def test_a_copy_that_returns_the_belief_itself_does_not_expose_it_to_mutation():
    b = SelfCopyingBelief([0.25] * 4)
    before = copy.deepcopy(b.probs)
    s = FakeSubstrate([_item("a", [0.0, -3.0, -3.0, -3.0]), _item("b", [-3.0, 0.0, 0.0, 0.0])])
    clean = eig_retrieve(s, MutatingBelief([0.25] * 4), _ll, k=2)
    r = eig_retrieve(s, b, _ll, k=2)
    assert b.probs == before
    assert [it.id for it in r.items] == [it.id for it in clean.items] and r.scores == clean.scores


class Immovable(SelfCopyingBelief):
    def __deepcopy__(self, memo):
        return self


def test_a_belief_that_cannot_be_cloned_at_all_is_refused():
    s = FakeSubstrate([_item("a", [0.0, -3.0, -3.0, -3.0])])
    with pytest.raises(ValueError, match="SAME object"):
        eig_retrieve(s, Immovable([0.25] * 4), _ll, k=1)


def test_value_errors_are_recorded_skips_and_other_errors_propagate():
    s = FakeSubstrate([_item("good", DECISIVE), SubstrateItem("text", "no payload", id="bare")])
    r = eig_retrieve(s, CategoricalBelief.uniform(3), _ll)
    assert [i.id for i in r.items] == ["good"]
    assert [(c.item.id, c.reason) for c in r.skipped] == [("bare", "no likelihood on this item")]
    mismatched = FakeSubstrate([_item("short", [0.0, 1.0])])
    r2 = eig_retrieve(mismatched, CategoricalBelief.uniform(3), _ll)
    assert r2.stop_reason == "no_usable_candidates" and len(r2.skipped) == 1

    def buggy(item):
        raise KeyError("bug")

    with pytest.raises(KeyError):
        eig_retrieve(s, CategoricalBelief.uniform(3), buggy)


def test_filters_and_k_validation():
    s = FakeSubstrate([_item("a", DECISIVE, kind="record"), _item("b", DECISIVE, kind="text", scope="team")])
    assert [i.id for i in eig_retrieve(s, CategoricalBelief.uniform(3), _ll, kind="text").items] == ["b"]
    assert [i.id for i in eig_retrieve(s, CategoricalBelief.uniform(3), _ll, scope="local").items] == ["a"]
    assert len(eig_retrieve(s, CategoricalBelief.uniform(3), _ll, k=0)) == 0
    for bad in (-1, True, 2.5):
        with pytest.raises(ValueError):
            eig_retrieve(s, CategoricalBelief.uniform(3), _ll, k=bad)
    with pytest.raises(TypeError):
        eig_retrieve(s, object(), _ll)


def test_eig_retrieval_validates_through_retrieval_and_composes_with_to_context():
    item = SubstrateItem("text", "evidence text", id="e1")
    with pytest.raises(ValueError):
        EigRetrieval("<information-gain>", [item], [])
    r = EigRetrieval("<information-gain>", [item], [0.4], skipped=[SkippedCandidate(item, "why")], stop_reason="x")
    assert r.skipped[0].reason == "why" and r.stop_reason == "x"
    packet = r.to_context("what is the evidence")
    assert isinstance(packet, ContextPacket) and [i.id for i in packet.items] == ["e1"]
