"""The pure credence math: log-odds from a 0.5 prior, tier strengths, the model-assertion cap, replay."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from projections.beliefs import claim_key
from service.beliefs.commands import harvest_knowledge
from service.beliefs.model import (
    MODEL_ASSERTION,
    MODEL_ASSERTION_CAP,
    TIER_STRENGTH,
    TIERS,
    BeliefItem,
    Claim,
    EvidenceEntry,
    belief_from_item,
    belief_to_item,
    credence_from_history,
    raw_entries,
)
from service.domain.validation import InvalidArgument

STRONG = [t for t in TIERS if t != MODEL_ASSERTION]
weights = st.floats(min_value=0.0, max_value=5.0, allow_nan=False)
entries = st.builds(
    EvidenceEntry,
    source_id=st.text(max_size=8),
    tier=st.sampled_from(TIERS),
    direction=st.sampled_from(["+", "-"]),
    weight=weights,
    time=st.just(0.0),
    verified=st.booleans(),
)
# A history that lifts the cap: one verified strong entry with positive weight.
anchors = st.builds(
    EvidenceEntry,
    source_id=st.just("doc"),
    tier=st.sampled_from(STRONG),
    direction=st.sampled_from(["+", "-"]),
    weight=st.floats(min_value=0.1, max_value=3.0),
    time=st.just(0.0),
    verified=st.just(True),
)
grounded_histories = st.tuples(anchors, st.lists(entries, max_size=6)).map(lambda t: [t[0], *t[1]])


def _flip(e: EvidenceEntry) -> EvidenceEntry:
    return EvidenceEntry(e.source_id, e.tier, "-" if e.direction == "+" else "+", e.weight, e.time, e.verified)


def test_no_evidence_is_even_odds() -> None:
    assert credence_from_history([]) == 0.5


def test_one_real_measurement_moves_three_log_odds_units() -> None:
    c = credence_from_history([EvidenceEntry("doc", "real_measurement", time=0.0)])
    assert math.log(c / (1 - c)) == pytest.approx(3.0)


def test_tier_strengths_are_the_documented_ladder() -> None:
    assert TIER_STRENGTH == {
        "model_assertion": 0.05,
        "executable": 0.3,
        "simulation": 0.5,
        "held_out_truth": 0.8,
        "real_measurement": 1.0,
    }
    assert MODEL_ASSERTION == "model_assertion" and MODEL_ASSERTION_CAP == 0.5


@given(st.lists(entries, max_size=8))
def test_credence_is_a_probability(history: list[EvidenceEntry]) -> None:
    assert 0.0 <= credence_from_history(history) <= 1.0


@given(st.lists(entries.filter(lambda e: e.tier == MODEL_ASSERTION or not e.verified or e.weight == 0), max_size=8))
def test_cap_holds_without_verified_support_above_model_assertion(history: list[EvidenceEntry]) -> None:
    assert credence_from_history(history) <= MODEL_ASSERTION_CAP


@given(grounded_histories, st.sampled_from(TIERS), st.sampled_from(TIERS), st.sampled_from(["+", "-"]), weights)
def test_monotone_in_strength(history: list[EvidenceEntry], t1: str, t2: str, direction: str, w: float) -> None:
    weak, strong = sorted([t1, t2], key=TIER_STRENGTH.__getitem__)
    c_weak = credence_from_history([*history, EvidenceEntry("x", weak, direction, w, 0.0)])
    c_strong = credence_from_history([*history, EvidenceEntry("x", strong, direction, w, 0.0)])
    assert c_strong >= c_weak if direction == "+" else c_strong <= c_weak


@given(grounded_histories, st.sampled_from(TIERS), weights, weights)
def test_monotone_in_weight(history: list[EvidenceEntry], tier: str, w1: float, w2: float) -> None:
    lo, hi = sorted([w1, w2])
    assert credence_from_history([*history, EvidenceEntry("x", tier, "+", hi, 0.0)]) >= credence_from_history(
        [*history, EvidenceEntry("x", tier, "+", lo, 0.0)]
    )


@given(grounded_histories)
def test_flipping_every_direction_mirrors_credence(history: list[EvidenceEntry]) -> None:
    assert credence_from_history([_flip(e) for e in history]) == pytest.approx(
        1.0 - credence_from_history(history), abs=1e-12
    )


@given(grounded_histories, st.randoms(use_true_random=False))
def test_replay_order_does_not_change_credence(history: list[EvidenceEntry], rnd: random.Random) -> None:
    shuffled = list(history)
    rnd.shuffle(shuffled)
    assert credence_from_history(shuffled) == credence_from_history(history)


@given(st.lists(entries, max_size=6))
def test_json_round_trip_replays_exactly(history: list[EvidenceEntry]) -> None:
    assert credence_from_history([e.to_json() for e in history]) == credence_from_history(history)


def test_unverified_strong_tier_counts_as_model_assertion_and_keeps_the_cap() -> None:
    fake = EvidenceEntry("made-up", "real_measurement", weight=10.0, time=0.0, verified=False)
    assert credence_from_history([fake]) == MODEL_ASSERTION_CAP
    down = credence_from_history([_flip(fake)])
    assert down == credence_from_history([EvidenceEntry("m", MODEL_ASSERTION, "-", 10.0, 0.0)])


@pytest.mark.parametrize("direction, expected", [("+", 1.0), ("-", 0.0)])
def test_huge_weights_saturate_without_overflow(direction: str, expected: float) -> None:
    c = credence_from_history([EvidenceEntry("doc", "real_measurement", direction, 1e300, 0.0)] * 3)
    assert math.isfinite(c) and c == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    "kw",
    [
        {"direction": "positive"},
        {"tier": "oracle"},
        {"weight": float("nan")},
        {"weight": -1.0},
        {"weight": True},
        {"time": float("inf")},
        {"verified": "yes"},
        {"source_id": 7},
    ],
)
def test_entry_construction_rejects_bad_fields(kw: dict) -> None:
    base = {"source_id": "s", "tier": MODEL_ASSERTION}
    with pytest.raises(ValueError) as err:
        EvidenceEntry(**{**base, **kw})
    assert "EvidenceEntry." + next(iter(kw)) in str(err.value)


def test_raw_entries_validate_and_name_the_field() -> None:
    out = raw_entries({"tier": "executable"})
    assert out[0]["source_id"] == "" and out[0]["direction"] == "+" and out[0]["weight"] == 1.0
    with pytest.raises(InvalidArgument, match=r"evidence\[1\]\.direction"):
        raw_entries([{"tier": "executable"}, {"tier": "executable", "direction": "up"}])
    with pytest.raises(InvalidArgument, match="verified is decided by assimilate"):
        raw_entries({"tier": "executable", "verified": True})
    with pytest.raises(InvalidArgument, match="tier is required"):
        raw_entries({"source_id": "x"})
    assert raw_entries([]) == []  # no evidence: assimilate then only finds or creates the belief


def test_raw_entries_drop_a_passed_entry_verified_flag() -> None:
    out = raw_entries(EvidenceEntry("s", "simulation", time=1.0, verified=True))
    assert "verified" not in out[0] and out[0]["time"] == 1.0


@given(st.text(min_size=1).filter(str.strip))
def test_claim_key_ignores_case_and_spacing(s: str) -> None:
    key = claim_key(s)
    assert claim_key(key) == key
    assert claim_key("  " + s.upper().replace(" ", "\t ") + "\n") == claim_key(s.upper())


@settings(max_examples=50)
@given(st.lists(entries, max_size=4), st.floats(min_value=-1e6, max_value=1e6) | st.none())
def test_belief_item_round_trips_through_its_stored_form(history: list[EvidenceEntry], q: float | None) -> None:
    belief = BeliefItem("b1", Claim("water is wet", {"model": "m"}, q), credence_from_history(history), history, "t")
    item = belief_to_item(belief)
    assert item.kind == "record" and item.tags == ["belief"] and item.payload["key"] == "water is wet"
    assert belief_from_item(item) == belief


def test_claim_validates_text_and_quantity() -> None:
    with pytest.raises(InvalidArgument, match="Claim.text"):
        Claim("  ")
    with pytest.raises(InvalidArgument, match="Claim.quantity"):
        Claim("x y", quantity=float("nan"))


def test_harvest_splits_sentences_and_stamps_the_source() -> None:
    source = {"model": "teacher-v1", "confidence": 0.9}
    claims = harvest_knowledge("The rate is 5%. It rose from 3% last year.\nok", source=source)
    assert [c.text for c in claims] == ["The rate is 5%.", "It rose from 3% last year."]
    assert all(c.produced_by == source and c.produced_by is not source for c in claims)
    custom = harvest_knowledge("a;b c", source={}, extract=lambda s: s.split(";"))
    assert [c.text for c in custom] == ["a", "b c"]
    with pytest.raises(InvalidArgument, match="source"):
        harvest_knowledge("x y.", source="teacher")  # type: ignore[arg-type]
