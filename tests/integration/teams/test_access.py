"""Persisted grants (AccessGranted/AccessRevoked), stored policies, and Space authorization on the real database."""

from __future__ import annotations

import pytest
from sqlalchemy import event

from projections.runner import rebuild, shadow_digests, table_digests
from service.domain.errors import ReadOnlyError
from service.domain.items import SubstrateItem
from service.domain.validation import InvalidArgument
from service.teams.access import PUBLIC, AccessDeniedError, AccessPolicy, grant_access, revoke_access, stored_policy
from service.teams.spaces import Space


def _types(store, since: int) -> list[tuple[str, str, str | None]]:  # type: ignore[no-untyped-def]
    return [(e.type, e.principal, e.scope) for e in store.events.read(since=since)]


def test_grant_and_revoke_are_events_recorded_under_the_granting_principal(store) -> None:  # type: ignore[no-untyped-def]
    head = store.events.head()
    grant_access(store, "team-a", "team-b", "read", by="team-b")
    assert revoke_access(store, "team-a", "team-b", by="team-b") is True
    assert _types(store, head) == [("AccessGranted", "team-b", "team-b"), ("AccessRevoked", "team-b", "team-b")]
    assert stored_policy(store) == AccessPolicy()


def test_stored_policy_equals_the_in_memory_policy_built_from_the_same_grants(store) -> None:  # type: ignore[no-untyped-def]
    grant_access(store, "team-a", "team-b", "read", by="team-b")
    grant_access(store, "team-a", "team-b", "write", by="team-b")
    grant_access(store, "team-c", "team-b", "readwrite", by="team-b")
    grant_access(store, "team-b", "team-a", "write", by="team-a")
    expected = AccessPolicy().grant("team-a", "team-b").grant("team-c", "team-b").grant_write("team-b", "team-a")
    assert stored_policy(store) == expected


def test_granting_someone_elses_scope_is_denied_and_writes_nothing(store) -> None:  # type: ignore[no-untyped-def]
    head = store.events.head()
    with pytest.raises(AccessDeniedError) as info:
        grant_access(store, "team-a", "team-b", "read", by="team-a")
    assert (info.value.principal, info.value.scope, info.value.mode) == ("team-a", "team-b", "write")
    assert store.events.head() == head


def test_a_write_grant_lets_its_holder_administer_the_scope(store) -> None:  # type: ignore[no-untyped-def]
    grant_access(store, "team-c", "team-b", "write", by="team-b")
    grant_access(store, "team-d", "team-b", "read", by="team-c")
    assert stored_policy(store).can_read("team-d", "team-b")


def test_a_third_party_cannot_revoke_but_a_grantee_may_renounce(store) -> None:  # type: ignore[no-untyped-def]
    grant_access(store, "team-a", "team-b", "read", by="team-b")
    head = store.events.head()
    with pytest.raises(AccessDeniedError):
        revoke_access(store, "team-a", "team-b", by="team-z")
    assert store.events.head() == head
    assert revoke_access(store, "team-a", "team-b", by="team-a") is True
    assert revoke_access(store, "team-a", "team-b", by="team-a") is False  # nothing left: no event
    assert store.events.head() == head + 1


@pytest.mark.parametrize("kw", [{"mode": "owner"}, {"principal": ""}, {"by": ""}])
def test_bad_grant_arguments_raise_before_any_event(store, kw) -> None:  # type: ignore[no-untyped-def]
    args = {"principal": "team-a", "scope": "team-b", "mode": "read", "by": "team-b", **kw}
    with pytest.raises(InvalidArgument):
        grant_access(store, args["principal"], args["scope"], args["mode"], by=args["by"])
    assert store.events.head() == 0


def test_a_live_stored_policy_sees_a_revocation_at_once_and_is_read_only(store) -> None:  # type: ignore[no-untyped-def]
    live = stored_policy(store, live=True)
    assert not live.can_read("team-a", "team-b")
    grant_access(store, "team-a", "team-b", "read", by="team-b")
    assert live.can_read("team-a", "team-b") and not live.can_write("team-a", "team-b")
    revoke_access(store, "team-a", "team-b", by="team-b")
    assert not live.can_read("team-a", "team-b")
    assert live.can_read("team-a", "team-a") and live.can_write("team-a", PUBLIC)
    with pytest.raises(ReadOnlyError):
        live.grant("team-a", "team-b")
    with pytest.raises(ReadOnlyError):
        live.revoke("team-a", "team-b")


def test_space_refuses_an_ungranted_shared_scope(store) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(AccessDeniedError) as info:
        Space(store, "team-a", shared=(PUBLIC, "team-b"))
    assert (info.value.principal, info.value.scope, info.value.mode) == ("team-a", "team-b", "read")


def test_space_sees_own_public_and_granted_scopes_never_another_teams_private(store) -> None:  # type: ignore[no-untyped-def]
    for scope in ("team-a", "team-b", "team-c", PUBLIC):
        store.add("text", f"note in {scope}", scope=scope)
    policy = AccessPolicy().grant_read("team-a", "team-b")
    space = Space(store, "team-a", shared=(PUBLIC, "team-b"), policy=policy)
    assert space.scopes == {"team-a", "team-b", PUBLIC}
    assert sorted(i.scope for i in space.all()) == [PUBLIC, "team-a", "team-b"]
    assert [i.scope for i in space.all(kind="record")] == []


def test_revoking_after_construction_hides_the_scope_immediately(store) -> None:  # type: ignore[no-untyped-def]
    store.add("text", "b's secret plan", scope="team-b")
    policy = AccessPolicy().grant_read("team-a", "team-b")
    space = Space(store, "team-a", shared=("team-b",), policy=policy)
    assert [i.text for i in space.all()] == ["b's secret plan"]
    policy.revoke("team-a", "team-b")
    assert space.scopes == {"team-a"}
    assert space.all() == []


def test_a_persisted_revocation_reaches_a_space_on_the_live_policy(store) -> None:  # type: ignore[no-untyped-def]
    store.add("text", "b's plan", scope="team-b")
    grant_access(store, "team-a", "team-b", "read", by="team-b")
    space = Space(store, "team-a", shared=("team-b",), policy=stored_policy(store, live=True))
    assert len(space.all()) == 1
    revoke_access(store, "team-a", "team-b", by="team-b")
    assert space.all() == []


def test_space_add_defaults_to_the_home_scope_and_records_the_team(store) -> None:  # type: ignore[no-untyped-def]
    space = Space(store, "team-a")
    item_id = space.add(kind="text", text="hello")
    assert store.get(item_id).scope == "team-a"
    assert _types(store, 0) == [("ItemPut", "team-a", "team-a")]
    assert store.get(space.add(kind="text", text="for all", scope=PUBLIC)).scope == PUBLIC


def test_space_add_into_another_teams_scope_is_denied_without_a_write(store) -> None:  # type: ignore[no-untyped-def]
    space = Space(store, "team-a", policy=AccessPolicy().grant_read("team-a", "team-b"))
    with pytest.raises(AccessDeniedError):
        space.add(kind="text", text="sneaky", scope="team-b")
    assert store.events.head() == 0
    space.policy.grant_write("team-a", "team-b")
    assert store.get(space.add(kind="text", text="invited", scope="team-b")).scope == "team-b"


def test_listing_for_a_principal_with_fifty_grants_is_one_query(store) -> None:  # type: ignore[no-untyped-def]
    scopes = [f"s{i:02d}" for i in range(50)]
    store.put_many([SubstrateItem(kind="text", text=f"x{i}", scope=scopes[i % 50]) for i in range(200)])
    store.add("text", "private", scope="team-z")
    policy = AccessPolicy()
    for s in scopes:
        policy.grant_read("team-a", s)
    space = Space(store, "team-a", shared=tuple(scopes), policy=policy)
    statements: list[str] = []

    def count(conn, cursor, statement, *args):  # type: ignore[no-untyped-def]
        statements.append(statement)

    event.listen(store.engine, "before_cursor_execute", count)
    try:
        items = space.all()
    finally:
        event.remove(store.engine, "before_cursor_execute", count)
    assert len(items) == 200 and all(i.scope != "team-z" for i in items)
    assert len(statements) == 1


def test_rebuild_reproduces_the_grants_read_model_exactly(store) -> None:  # type: ignore[no-untyped-def]
    grant_access(store, "team-a", "team-b", "read", by="team-b")
    grant_access(store, "team-c", "team-b", "readwrite", by="team-b")
    grant_access(store, "team-a", "team-b", "write", by="team-b")
    revoke_access(store, "team-c", "team-b", by="team-b")
    before = stored_policy(store)
    with store.engine.connect() as c:
        _, digests = table_digests(c)
    assert shadow_digests(store.engine)[2]["grants"] == digests["grants"]
    report = rebuild(store.engine)
    assert report.digests["grants"] == digests["grants"]
    assert stored_policy(store) == before


def test_a_persisted_read_grant_lets_its_holder_publish_from_that_scope(store) -> None:  # type: ignore[no-untyped-def]
    from service.teams.spaces import publish

    b = store.add("text", "b's finding", scope="team-b")
    live = stored_policy(store, live=True)
    assert publish(store, [b], to=PUBLIC, by="team-c", policy=live) == []
    grant_access(store, "team-c", "team-b", "read", by="team-b")
    assert publish(store, [b], to=PUBLIC, by="team-c", policy=live) == [b]
