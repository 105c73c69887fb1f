"""check_factuality, its receipt, sentence_claims and the negation-aware default corroborator."""

from __future__ import annotations

import json
import math
import re

import pytest

from service.beliefs.corroborate import default_corroborates
from service.domain.items import SubstrateItem
from service.domain.validation import InvalidArgument
from service.reasoning.factuality import (
    ClaimVerdict,
    Corroboration,
    FactualityReceipt,
    check_factuality,
    sentence_claims,
)


class FakeSubstrate:
    """Test double for the substrate surface: token-overlap search over a list of items."""

    def __init__(self, *texts: str, scope: str = "local") -> None:
        self.items = [SubstrateItem("text", t, scope=scope) for t in texts]
        self.calls: list[dict] = []

    def search(self, query, k=5, *, kind=None, scope=None):
        self.calls.append({"query": query, "k": k, "scope": scope})
        q = set(re.findall(r"[a-z0-9]+", query.lower()))
        scored = [
            (it, len(q & set(re.findall(r"[a-z0-9]+", it.text.lower()))) / max(len(q), 1))
            for it in self.items
            if scope is None or it.scope == scope
        ]
        return sorted(scored, key=lambda p: -p[1])[:k]


def test_corroboration_is_a_lowercase_str_enum():
    assert [c.value for c in Corroboration] == ["supported", "contradicted", "unverified"]
    assert Corroboration.SUPPORTED == "supported"


def test_sentence_claims_splits_on_terminators_and_newlines_and_drops_one_word_parts():
    text = "Paris is in France. Yes! Is Rome in Italy?\nBerlin is German\nOk"
    assert sentence_claims(text) == ["Paris is in France.", "Is Rome in Italy?", "Berlin is German"]
    assert sentence_claims("") == [] and sentence_claims(None) == []


def test_default_corroborator_distinguishes_support_contradiction_and_silence():
    assert default_corroborates("The drug cures cancer.", "the drug cures cancer") is Corroboration.SUPPORTED
    contra = "The drug cures no cancer and does not work."
    assert default_corroborates(contra, "the drug cures cancer") is Corroboration.CONTRADICTED
    assert default_corroborates("The drug doesn't cure cancer.", "the drug cure cancer") is Corroboration.CONTRADICTED
    assert default_corroborates("Bananas are yellow.", "the drug cures cancer") is Corroboration.UNVERIFIED


def test_negation_scope_stops_at_the_sentence_end():
    evidence = "The drug cures cancer. Side effects are not common."
    assert default_corroborates(evidence, "the drug cures cancer") is Corroboration.SUPPORTED


def test_supported_claim_carries_a_citation():
    sub = FakeSubstrate("Refunds are processed within five business days.")
    receipt = check_factuality(sub, "Refunds are processed within five business days.")
    (verdict,) = receipt.verdicts
    assert verdict.supported and not verdict.contradicted
    assert verdict.citations[0]["id"] == sub.items[0].id
    assert receipt.grounded_fraction == 1.0 and receipt.is_grounded()


def test_contradicted_claim_is_flagged_and_not_supported():
    sub = FakeSubstrate("Refunds are never processed within five business days.")
    receipt = check_factuality(sub, "Refunds are processed within five business days.")
    (verdict,) = receipt.contradicted()
    assert not verdict.supported and verdict.contradictions[0]["id"] == sub.items[0].id
    assert receipt.unsupported() == [verdict]


def test_conflicting_evidence_sets_both_supported_and_contradicted():
    sub = FakeSubstrate("Refunds are processed within five days.", "Refunds are not processed within five days.")
    (verdict,) = check_factuality(sub, "Refunds are processed within five days.").verdicts
    assert verdict.supported and verdict.contradicted


def test_no_claims_is_unknown_and_never_grounded():
    receipt = check_factuality(FakeSubstrate("anything at all"), "Ok.")
    assert receipt.verdicts == [] and receipt.grounded_fraction is None
    assert not receipt.is_grounded() and not receipt.is_grounded(0.0)
    assert receipt.as_dict()["grounded_fraction"] is None


def test_evidence_below_min_score_does_not_count():
    sub = FakeSubstrate("Refunds are processed within five business days.")
    receipt = check_factuality(sub, "Refunds are processed within five business days.", min_score=1.01)
    assert not receipt.verdicts[0].supported and receipt.verdicts[0].score == pytest.approx(1.0)


def test_bool_corroborator_maps_true_to_supported_and_false_to_unverified():
    sub = FakeSubstrate("Refunds are processed within five business days.")
    claim = "Refunds are processed within five business days."
    assert check_factuality(sub, claim, corroborates=lambda e, c: True).verdicts[0].supported
    verdict = check_factuality(sub, claim, corroborates=lambda e, c: False).verdicts[0]
    assert not verdict.supported and not verdict.contradicted
    with pytest.raises(InvalidArgument):
        check_factuality(sub, claim, corroborates=lambda e, c: 0.7)


def test_custom_extract_k_and_scope_reach_retrieval():
    sub = FakeSubstrate("alpha beta gamma", scope="team-a")
    receipt = check_factuality(sub, "ignored", extract=lambda a: ["alpha beta", "gamma delta"], k=2, scope="team-a")
    assert [v.claim for v in receipt.verdicts] == ["alpha beta", "gamma delta"]
    assert {c["k"] for c in sub.calls} == {2} and {c["scope"] for c in sub.calls} == {"team-a"}


@pytest.mark.parametrize("kw", [{"k": -1}, {"k": 1.0}, {"min_score": math.nan}])
def test_check_factuality_rejects_bad_knobs(kw):
    with pytest.raises(InvalidArgument):
        check_factuality(FakeSubstrate(), "Some claim here.", **kw)


def test_receipt_is_a_record_detached_from_the_callers_containers():
    citations = [{"id": "x"}]
    verdict = ClaimVerdict("a claim", True, 0.5, citations)
    verdicts = [verdict]
    receipt = FactualityReceipt("a claim", verdicts)
    citations.append({"id": "y"})
    verdicts.clear()
    assert verdict.citations == [{"id": "x"}] and receipt.verdicts == [verdict]


def test_grounded_fraction_and_threshold():
    receipt = FactualityReceipt("x", [ClaimVerdict("a b", True, 1.0), ClaimVerdict("c d", False, 0.0)])
    assert receipt.grounded_fraction == 0.5
    assert receipt.is_grounded(0.5) and not receipt.is_grounded()


def test_as_dict_is_json_serializable():
    sub = FakeSubstrate("Refunds are processed within five business days.")
    payload = check_factuality(sub, "Refunds are processed within five business days. Cats can fly.").as_dict()
    again = json.loads(json.dumps(payload, allow_nan=False))
    assert again["n_claims"] == 2 and again["n_unsupported"] == 1
