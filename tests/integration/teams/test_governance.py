"""Governance: read-only audited ACL, bootstrap marking, and the append-only proposal history (MXR-080-1883)."""

from __future__ import annotations

import time

import pytest

from projections.runner import rebuild, shadow_digests, table_digests
from service.teams.governance import (
    APPROVED,
    PENDING,
    Governance,
    GovernanceAuthorizationError,
    approve,
    authorization_decision,
    grant_approver,
    pending,
    proposal_history,
    propose,
    reject,
    stored_governance,
)
from service.teams.spaces import history, revision


# ------------------------------------------------------------------ the in-memory Governance value
def test_approvers_and_grants_are_read_only_views() -> None:
    gov = Governance().grant("alice", "prod", by="alice")
    with pytest.raises(TypeError):
        gov.approvers["secret"] = frozenset({"mallory"})  # type: ignore[index]
    with pytest.raises(AttributeError):
        gov.approvers["prod"].add("mallory")  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        gov.grants[0]["who"] = "mallory"  # type: ignore[index]
    assert isinstance(gov.grants, tuple)
    assert gov.approvers == {"prod": frozenset({"alice"})}


def test_the_first_grant_into_an_unowned_scope_is_marked_bootstrap() -> None:
    before = time.time()
    gov = Governance().grant("alice", "prod", by="anyone").grant("bob", "prod", by="alice")
    assert all(before <= g["granted_at"] <= time.time() for g in gov.grants)  # when, besides who, where and by whom
    assert [{k: v for k, v in g.items() if k != "granted_at"} for g in gov.grants] == [
        {"who": "alice", "scope": "prod", "by": "anyone", "bootstrap": True},
        {"who": "bob", "scope": "prod", "by": "alice", "bootstrap": False},
    ]
    assert gov.may_approve("bob", "prod") and not gov.may_approve("anyone", "prod")


def test_once_owned_only_an_existing_approver_may_grant() -> None:
    gov = Governance().grant("alice", "prod", by="alice")
    with pytest.raises(GovernanceAuthorizationError) as info:
        gov.grant("mallory", "prod", by="mallory")
    assert isinstance(info.value, PermissionError) and info.value.scope == "prod"
    assert gov.approvers["prod"] == frozenset({"alice"}) and len(gov.grants) == 1


def test_the_constructor_copies_what_it_is_given() -> None:
    acl = {"prod": {"alice"}}
    gov = Governance(acl)
    acl["prod"].add("mallory")
    assert not gov.may_approve("mallory", "prod")


# ------------------------------------------------------------------ persisted governance
def test_approver_grants_are_events_and_stored_governance_rebuilds_them(store) -> None:  # type: ignore[no-untyped-def]
    grant_approver(store, "alice", "prod", by="alice")
    grant_approver(store, "bob", "prod", by="alice")
    events = [(e.type, e.stream, e.principal, e.data["bootstrap"]) for e in store.events.read()]
    assert events == [
        ("ApproverGranted", "governance:prod", "alice", True),
        ("ApproverGranted", "governance:prod", "alice", False),
    ]
    expected = Governance().grant("alice", "prod", by="alice").grant("bob", "prod", by="alice")
    gov = stored_governance(store)
    recorded = [e.recorded_at.timestamp() for e in store.events.read()]
    assert [g["granted_at"] for g in gov.grants] == pytest.approx(recorded)  # the grant events' own times

    def who(grants):  # type: ignore[no-untyped-def]
        return [{k: v for k, v in g.items() if k != "granted_at"} for g in grants]

    assert gov.approvers == expected.approvers and who(gov.grants) == who(expected.grants)


def test_an_unauthorized_persisted_grant_is_refused_and_writes_nothing(store) -> None:  # type: ignore[no-untyped-def]
    grant_approver(store, "alice", "prod", by="alice")
    head = store.events.head()
    with pytest.raises(GovernanceAuthorizationError):
        grant_approver(store, "mallory", "prod", by="mallory")
    assert store.events.head() == head


def _proposed(store):  # type: ignore[no-untyped-def]
    item = store.add("text", "a finding", scope="team-a")
    assert propose(store, [item], to="prod", by="team-a") == [item]
    return item, Governance().grant("alice", "prod", by="alice")


def test_a_proposed_item_is_pending_but_not_yet_visible_in_the_target(store) -> None:  # type: ignore[no-untyped-def]
    item, _ = _proposed(store)
    assert store.get(item).scope == "team-a"
    assert [i.id for i in pending(store)] == [item]
    assert [i.id for i in pending(store, to="prod")] == [item] and pending(store, to="other") == []
    head = store.events.head()
    assert propose(store, [item], to="prod", by="team-a") == []  # already pending: skipped, nothing written
    assert propose(store, ["missing"], to="prod", by="team-a") == []
    assert store.events.head() == head


def test_approval_by_a_non_approver_raises_and_writes_nothing(store) -> None:  # type: ignore[no-untyped-def]
    item, gov = _proposed(store)
    head = store.events.head()
    with pytest.raises(GovernanceAuthorizationError):
        approve(store, item, by="mallory", governance=gov)
    assert store.events.head() == head and store.get(item).scope == "team-a"


def test_approval_publishes_and_appends_an_approved_entry(store) -> None:  # type: ignore[no-untyped-def]
    item, gov = _proposed(store)
    before = store.get(item).to_json()
    assert approve(store, item, by="alice", governance=gov) is True
    assert store.get(item).scope == "prod" and pending(store) == []
    (published,) = history(store, item)
    assert (published["by"], published["from"], published["to"], published["via"]) == (
        "alice",
        "team-a",
        "prod",
        "promotion",
    )
    assert revision(store, published["revision"]) == before
    entries = proposal_history(store, item)
    assert [(e["status"], e["by"]) for e in entries] == [("pending", "team-a"), ("approved", "alice")]
    assert entries[1]["decides"] == entries[0]["seq"]
    mirrored = store.get(item).provenance["proposal_history"]
    assert [e["status"] for e in mirrored] == ["pending", "approved"] == [PENDING, APPROVED]
    assert store.get(item).provenance["proposal"]["status"] == APPROVED  # the latest record, mirrored
    assert approve(store, item, by="alice", governance=gov) is False  # nothing pending any more


def test_approve_to_a_different_scope_than_proposed_is_refused(store) -> None:  # type: ignore[no-untyped-def]
    item, gov = _proposed(store)
    with pytest.raises(ValueError, match="prod") as refused:
        approve(store, item, by="alice", governance=gov.grant("alice", "elsewhere", by="alice"), to="elsewhere")
    assert isinstance(refused.value, GovernanceAuthorizationError)  # a refused transition, as well as a bad argument
    assert store.get(item).scope == "team-a"


def test_governance_authorization_error_also_takes_just_a_message() -> None:
    err = GovernanceAuthorizationError("not yours to approve")
    assert isinstance(err, PermissionError) and str(err) == "not yours to approve"
    assert str(GovernanceAuthorizationError("bob", "prod", "approve promotion")) == (
        "'bob' may not approve promotion in scope 'prod'"
    )


def test_a_third_party_cannot_reject_someone_elses_proposal(store) -> None:  # type: ignore[no-untyped-def]
    item, gov = _proposed(store)
    head = store.events.head()
    with pytest.raises(GovernanceAuthorizationError):
        reject(store, item, by="mallory", governance=gov, reason="spite")
    assert store.events.head() == head and [i.id for i in pending(store)] == [item]


def test_the_proposer_may_withdraw_and_an_approver_may_refuse(store) -> None:  # type: ignore[no-untyped-def]
    item, gov = _proposed(store)
    assert reject(store, item, by="team-a", governance=gov) is True
    assert propose(store, [item], to="prod", by="team-a") == [item]
    assert reject(store, item, by="alice", governance=gov, reason="needs a source") is True
    assert reject(store, item, by="alice", governance=gov) is False
    entries = proposal_history(store, item)
    assert [(e["status"], e["by"]) for e in entries] == [
        ("pending", "team-a"),
        ("rejected", "team-a"),
        ("pending", "team-a"),
        ("rejected", "alice"),
    ]
    assert entries[1]["withdrawn"] is True and entries[3]["withdrawn"] is False
    assert entries[3]["reason"] == "needs a source" and store.get(item).scope == "team-a"


def test_the_proposal_history_survives_a_caller_editing_provenance(store) -> None:  # type: ignore[no-untyped-def]
    item, gov = _proposed(store)
    reject(store, item, by="alice", governance=gov, reason="no")
    store.update(item, provenance={"proposal_history": []})  # tamper with the mirror
    assert [e["status"] for e in proposal_history(store, item)] == ["pending", "rejected"]
    propose(store, [item], to="prod", by="team-a")
    mirrored = store.get(item).provenance["proposal_history"]
    assert [e["status"] for e in mirrored] == ["pending", "rejected", "pending"]  # restored from the log


def test_a_removed_item_drops_out_of_pending(store) -> None:  # type: ignore[no-untyped-def]
    item, gov = _proposed(store)
    store.remove(item)
    assert pending(store) == []
    assert approve(store, item, by="alice", governance=gov) is False


def test_authorization_decision_adapts_only_completed_proposals(store) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError):
        authorization_decision(store, "missing", capability_id="cap", version="1")
    item, gov = _proposed(store)
    with pytest.raises(ValueError, match="pending"):
        authorization_decision(store, item, capability_id="cap", version="1")
    approve(store, item, by="alice", governance=gov)
    d = authorization_decision(store, item, capability_id="cap.promote", version="2")
    assert (d.decision, d.authorized, d.decided_by, d.proposed_by, d.scope) == (
        "approved",
        True,
        "alice",
        "team-a",
        "prod",
    )
    assert d.digest.startswith("sha256:") and revision(store, d.digest)["scope"] == "prod"
    assert authorization_decision(store, item, capability_id="c", version="1", digest="sha256:x").digest == "sha256:x"
    assert d.as_dict()["capability_id"] == "cap.promote"


def test_rebuild_reproduces_governance_exactly(store) -> None:  # type: ignore[no-untyped-def]
    grant_approver(store, "alice", "prod", by="alice")
    grant_approver(store, "bob", "prod", by="alice")
    gov = stored_governance(store)
    a, b = store.add("text", "a", scope="team-a"), store.add("text", "b", scope="team-a")
    propose(store, [a, b], to="prod", by="team-a")
    approve(store, a, by="bob", governance=gov)
    reject(store, b, by="alice", governance=gov, reason="dup")
    before = (stored_governance(store).grants, proposal_history(store, a), proposal_history(store, b))
    with store.engine.connect() as c:
        _, digests = table_digests(c)
    assert shadow_digests(store.engine)[2] == digests
    report = rebuild(store.engine)
    assert {t: report.digests[t] for t in ("approvers", "proposals")} == {
        t: digests[t] for t in ("approvers", "proposals")
    }
    assert (stored_governance(store).grants, proposal_history(store, a), proposal_history(store, b)) == before
