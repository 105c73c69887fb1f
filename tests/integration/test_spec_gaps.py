"""Spec conformance: audit entry shapes, freshness reference lookup, empty evidence, one-sample UQ, model assertions."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from projections.runner import rebuild, table_digests
from service import ExternalModel, FreshnessState, audit_substrate, check_freshness
from service.beliefs.commands import Claim, assimilate, retrieve_beliefs
from service.domain.items import SubstrateItem
from service.domain.validation import InvalidArgument
from service.reasoning.interop import Confidence


def _put(store, item_id: str, parents: list[str] | None = None, scope: str = "local") -> None:  # type: ignore[no-untyped-def]
    store.put(SubstrateItem(kind="text", text=item_id, id=item_id, derived_from=parents or [], scope=scope))


# ----------------------------------------------------------------- audit_substrate entries
def test_audit_names_each_item_with_the_ids_behind_its_state(store) -> None:  # type: ignore[no-untyped-def]
    _put(store, "root")
    _put(store, "bad", ["gone"])
    _put(store, "loop", ["loop"])
    _put(store, "deep", ["mid"])
    _put(store, "mid", ["root"])
    report = audit_substrate(store, max_depth=1)
    assert set(report) == {"n_items", "n_intact", "n_broken", "n_unverified", "broken", "unverified"}
    assert report["broken"] == [
        {"item_id": "bad", "dangling": ["gone"], "cycles": []},
        {"item_id": "loop", "dangling": [], "cycles": ["loop"]},
    ]
    assert report["unverified"] == [{"item_id": "deep", "unverified": [], "truncated": ["mid"]}]
    assert (report["n_items"], report["n_intact"], report["n_broken"], report["n_unverified"]) == (5, 2, 2, 1)


def test_a_scoped_audit_entry_names_the_unreadable_ancestor(store) -> None:  # type: ignore[no-untyped-def]
    _put(store, "secret", scope="team-b")
    _put(store, "mine", ["secret"], scope="team-a")
    report = audit_substrate(store, scope="team-a")
    assert report["unverified"] == [{"item_id": "mine", "unverified": ["secret"], "truncated": []}]
    assert report["broken"] == [] and report["n_unverified"] == 1


# ----------------------------------------------------------------- check_freshness reference lookup
def test_a_deleted_file_named_by_payload_path_is_stale(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "gone.txt"
    f.write_text("x")
    item_id = store.add("text", "x", payload={"path": str(f)})
    assert check_freshness(store, item_id).state is FreshnessState.FRESH
    f.unlink()
    v = check_freshness(store, item_id)
    assert v.state is FreshnessState.STALE and v.signals == [f"moved: {f} no longer exists"]


def test_a_deleted_file_named_by_provenance_source_is_stale(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    gone = str(tmp_path / "feed.jsonl")
    item_id = store.add("text", "x", provenance={"source": gone})
    v = check_freshness(store, item_id)
    assert v.state is FreshnessState.STALE and v.signals == [f"moved: {gone} no longer exists"]
    label = store.add("text", "y", provenance={"source": "documents"})  # a bare label is not a path
    assert check_freshness(store, label).state is FreshnessState.FRESH


def test_reference_lookup_order_is_ref_then_path_then_provenance(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    here = tmp_path / "here.txt"
    here.write_text("x")
    gone = str(tmp_path / "gone.txt")
    fresh = [
        {"payload": {"ref": str(here), "path": gone}},
        {"payload": {"path": str(here)}, "provenance": {"path": gone, "source": gone}},
        {"provenance": {"path": str(here), "source": gone}},
        {"payload": {"ref": 7, "path": str(here)}, "provenance": {"path": gone}},  # a non-string ref is skipped
    ]
    for kw in fresh:
        assert check_freshness(store, store.add("text", "x", **kw)).state is FreshnessState.FRESH, kw
    stale = store.add("text", "x", payload={"ref": ""}, provenance={"path": "relative-name", "source": gone})
    assert check_freshness(store, stale).signals == [f"moved: {gone} no longer exists"]


# ----------------------------------------------------------------- assimilate with no evidence
def test_no_evidence_creates_the_belief_at_the_prior_as_an_event(store) -> None:  # type: ignore[no-untyped-def]
    b = assimilate(store, Claim("The tide turns at noon.", {"model": "m"}), [])
    assert b.credence == 0.5 and b.evidence_history == [] and b.scope == "local"
    assert [e.type for e in store.events.read(stream=b.id)] == ["ItemPut"]
    item = store.get(b.id)
    assert item is not None and item.kind == "record" and item.tags == ["belief"]
    assert item.payload["credence"] == 0.5 and item.payload["evidence_history"] == []
    assert [r.id for r in retrieve_beliefs(store, "tide noon")] == [b.id]

    head = store.events.head()
    again = assimilate(store, "the tide TURNS at noon.", [])
    assert again.id == b.id and again.credence == 0.5 and store.events.head() == head  # nothing new to record

    updated = assimilate(store, "The tide turns at noon.", {"source_id": "m", "tier": "model_assertion"})
    assert updated.id == b.id and len(updated.evidence_history) == 1
    assert [(e.type, e.version) for e in store.events.read(stream=b.id)] == [("ItemPut", 1), ("EvidenceAssimilated", 2)]

    assimilate(store, "Another claim, in another scope.", [], scope="team-a")
    with store.engine.connect() as c:
        _, live = table_digests(c)
        rows = c.execute(text("SELECT count(*) FROM beliefs")).scalar_one()
    assert rows == 2
    assert rebuild(store.engine).digests == live


# ----------------------------------------------------------------- ExternalModel samples
def test_one_sample_is_allowed_and_measures_zero_entropy() -> None:
    calls: list[str] = []
    model = ExternalModel(lambda p: calls.append(p) or "answer", samples=1, max_entropy=0.0)
    result = model.answer("q")
    assert calls == ["q"] and result.answer == "answer" and result.entropy == 0.0
    assert result.state is Confidence.CONFIDENT
    with pytest.raises(InvalidArgument, match="samples"):
        ExternalModel(lambda p: p, samples=0)


# ----------------------------------------------------------------- model_assertion verification (kept)
def test_model_assertion_verified_records_whether_its_source_resolved(store) -> None:  # type: ignore[no-untyped-def]
    store.add("text", "a receipt", id="receipt")
    resolved = assimilate(store, "Resolved.", {"source_id": "receipt", "tier": "model_assertion", "direction": "-"})
    unresolved = assimilate(store, "Unresolved.", {"source_id": "nowhere", "tier": "model_assertion", "direction": "-"})
    assert resolved.evidence_history[0].verified and not unresolved.evidence_history[0].verified
    assert resolved.credence == unresolved.credence < 0.5  # the flag never moves a model assertion's credence
