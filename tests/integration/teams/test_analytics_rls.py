"""psql analytics: the views, and row-level security that shows a reader only the scopes its principal may read."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Connection

from service.teams.access import PUBLIC, grant_access, revoke_access
from service.teams.governance import propose
from service.teams.spaces import publish


@contextlib.contextmanager
def reader(store, principal: str | None) -> Iterator[Connection]:  # type: ignore[no-untyped-def]
    """A connection acting as substrate_reader for ``principal``, rolled back afterwards."""
    with store.engine.connect() as c:
        c.begin()
        c.execute(text("SET LOCAL ROLE substrate_reader"))
        if principal is not None:
            c.execute(text("SELECT set_config('substrate.principal', :p, true)"), {"p": principal})
        try:
            yield c
        finally:
            c.rollback()


def _scopes(c: Connection, sql: str) -> set[str]:
    return {r[0] for r in c.execute(text(sql))}


@pytest.fixture
def teams(store):  # type: ignore[no-untyped-def]
    for scope in ("team-a", "team-b", "team-c", PUBLIC):
        store.add("text", f"note in {scope}", scope=scope)
        store.add("record", payload={"n": 1}, scope=scope)
    return store


def test_a_reader_sees_its_home_scope_and_public_only(teams) -> None:  # type: ignore[no-untyped-def]
    with reader(teams, "team-a") as c:
        assert _scopes(c, "SELECT scope FROM items") == {"team-a", PUBLIC}
        assert _scopes(c, "SELECT scope FROM events") == {"team-a", PUBLIC}
        assert _scopes(c, "SELECT doc->>'scope' FROM revisions") == {"team-a", PUBLIC}
        assert c.execute(text("SELECT principal, visible_scopes FROM analytics_principal")).one() == (
            "team-a",
            [PUBLIC, "team-a"],
        )


def test_a_grant_opens_a_scope_and_a_revocation_closes_it_at_once(teams) -> None:  # type: ignore[no-untyped-def]
    grant_access(teams, "team-a", "team-c", "read", by="team-c")
    with reader(teams, "team-a") as c:
        assert _scopes(c, "SELECT scope FROM items") == {"team-a", "team-c", PUBLIC}
    revoke_access(teams, "team-a", "team-c", by="team-c")
    with reader(teams, "team-a") as c:
        assert _scopes(c, "SELECT scope FROM items") == {"team-a", PUBLIC}


def test_a_write_only_grant_does_not_open_reading(teams) -> None:  # type: ignore[no-untyped-def]
    grant_access(teams, "team-a", "team-c", "write", by="team-c")
    with reader(teams, "team-a") as c:
        assert _scopes(c, "SELECT scope FROM items") == {"team-a", PUBLIC}


def test_a_reader_without_a_principal_sees_only_public(teams) -> None:  # type: ignore[no-untyped-def]
    with reader(teams, None) as c:
        assert _scopes(c, "SELECT scope FROM items") == {PUBLIC}


def test_a_reader_sees_only_its_own_grants(teams) -> None:  # type: ignore[no-untyped-def]
    grant_access(teams, "team-a", "team-c", "read", by="team-c")
    grant_access(teams, "team-b", "team-c", "read", by="team-c")
    with reader(teams, "team-b") as c:
        assert c.execute(text("SELECT principal, scope, can_read FROM analytics_access")).all() == [
            ("team-b", "team-c", True)
        ]


def test_the_service_connection_is_unaffected(teams) -> None:  # type: ignore[no-untyped-def]
    with teams.engine.connect() as c:
        assert _scopes(c, "SELECT scope FROM items") == {"team-a", "team-b", "team-c", PUBLIC}
    assert len(teams) == 8


def test_a_role_per_principal_cannot_impersonate_by_setting_the_principal(teams) -> None:  # type: ignore[no-untyped-def]
    role = f"team-b-{uuid.uuid4().hex[:8]}"
    teams.add("text", "for the role", scope=role)
    with teams.engine.connect() as c:
        c.begin()  # role creation is transactional: rolled back below, nothing left on the cluster
        try:
            c.execute(text(f'CREATE ROLE "{role}" NOLOGIN IN ROLE substrate_reader'))
            c.execute(text(f'SET LOCAL ROLE "{role}"'))
            c.execute(text("SELECT set_config('substrate.principal', 'team-a', true)"))
            assert _scopes(c, "SELECT scope FROM items") == {role, PUBLIC}
        finally:
            c.rollback()


def test_items_per_scope_and_kind_view(teams) -> None:  # type: ignore[no-untyped-def]
    with reader(teams, "team-a") as c:
        rows = c.execute(text("SELECT scope, kind, items FROM analytics_items_by_scope_kind ORDER BY 1, 2")).all()
    assert rows == [(PUBLIC, "record", 1), (PUBLIC, "text", 1), ("team-a", "record", 1), ("team-a", "text", 1)]


def test_events_per_day_and_type_view(teams) -> None:  # type: ignore[no-untyped-def]
    with reader(teams, "team-a") as c:
        rows = c.execute(text("SELECT type, sum(events) FROM analytics_events_per_day GROUP BY type")).all()
    assert rows == [("ItemPut", 4)]


def test_share_history_view_follows_the_readers_scopes(teams) -> None:  # type: ignore[no-untyped-def]
    a = teams.add("text", "to share", scope="team-a")
    b = teams.add("text", "b keeps", scope="team-b")
    publish(teams, [a], to=PUBLIC, by="team-a")
    publish(teams, [b], to="team-b", by="team-b")
    with reader(teams, "team-c") as c:
        rows = c.execute(text("SELECT item_id, action, by, from_scope, to_scope FROM analytics_share_history")).all()
    assert rows == [(a, "publish", "team-a", "team-a", PUBLIC)]


def test_pending_proposals_view(teams) -> None:  # type: ignore[no-untyped-def]
    a = teams.add("text", "promote me", scope="team-a")
    b = teams.add("text", "b's candidate", scope="team-b")
    propose(teams, [a, b], to="prod", by="lead")
    with reader(teams, "team-a") as c:
        rows = c.execute(
            text("SELECT item_id, preview, from_scope, to_scope, proposed_by FROM analytics_pending_proposals")
        ).all()
    assert rows == [(a, "promote me", "team-a", "prod", "lead")]


def test_visibility_is_one_initplan_not_a_per_row_lookup(teams) -> None:  # type: ignore[no-untyped-def]
    with reader(teams, "team-a") as c:
        plan = "\n".join(r[0] for r in c.execute(text("EXPLAIN SELECT * FROM items")))
    assert "InitPlan" in plan and "SubPlan" not in plan
