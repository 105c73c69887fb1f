"""as_of(): read-only views of the past, answered from the validity intervals of the read models."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from service import ReadOnlyError, Substrate, SubstrateItem


def test_view_shows_the_state_after_a_given_seq(store: Substrate) -> None:
    a = store.add("text", "first version")
    seq_after_put = store.position
    store.update(a, text="second version")
    b = store.add("record", payload={"n": 1})
    store.remove(a)
    past = store.as_of(seq_after_put)
    assert past.get(a).text == "first version"  # type: ignore[union-attr]
    assert past.get(b) is None and len(past) == 1
    assert store.get(a) is None and len(store) == 1
    past.close()


def test_view_by_timestamp(store: Substrate) -> None:
    store.add("text", "before")
    time.sleep(0.05)
    cut = datetime.now(UTC)
    time.sleep(0.05)
    store.add("text", "after")
    view = store.as_of(cut)
    assert [i.text for i in view.all()] == ["before"]
    assert [i.text for i in store.as_of(datetime(2000, 1, 1)).all()] == []


def test_views_refuse_writes(store: Substrate) -> None:
    store.add("text", "x")
    view = store.as_of(1)
    with pytest.raises(ReadOnlyError):
        view.put(SubstrateItem(kind="text", text="nope"))
    with pytest.raises(ReadOnlyError):
        view.add("text", "nope")
    assert store.events.head() == 1


def test_bad_positions_are_rejected(store: Substrate) -> None:
    store.add("text", "x")
    for bad in (-1, 2, True, "1", 1.0):
        with pytest.raises(ValueError):
            store.as_of(bad)  # type: ignore[arg-type]


def test_with_principal_records_who_wrote(store: Substrate) -> None:
    alice = store.with_principal("alice")
    alice.add("text", "hello", scope="alice")
    assert [e.principal for e in store.events.read()] == ["alice"]


def test_searching_the_past_reproduces_past_results_without_touching_live_models(store: Substrate) -> None:
    from sqlalchemy import text

    for n in range(30):
        store.add("text", f"note {n} about {'apples' if n % 3 else 'pears'} and orchards", scope="farm")
    then = store.position
    before = [(i.id, round(s, 9)) for i, s in store.search("pears orchards", k=5, scope="farm")]
    for n in range(30):
        store.add("text", f"pears everywhere {n}, pears pears", scope="farm")
    store.search("pears", k=3, scope="farm")  # the live model refits on the new content
    with store.engine.connect() as c:
        live = c.execute(text("SELECT count(*) FROM item_vectors")).scalar_one()
    past = store.as_of(then)
    assert [(i.id, round(s, 9)) for i, s in past.search("pears orchards", k=5, scope="farm")] == before
    with store.engine.connect() as c:
        assert c.execute(text("SELECT count(*) FROM item_vectors")).scalar_one() == live
    past.close()


def test_reading_the_past_writes_nothing_and_keeps_no_copy(store: Substrate) -> None:
    from sqlalchemy import text

    from service.teams.access import grant_access, stored_policy
    from service.teams.governance import pending, proposal_history, propose
    from service.teams.spaces import history, publish, revision

    a = store.add("text", "first", scope="team-a")
    grant_access(store, "bob", "team-a", "read", by="team-a")
    propose(store, [a], to="team-b", by="team-a")
    publish(store, [a], to="public", by="team-a")
    store.update(a, text="second")
    name = store.engine.url.database
    with store.engine.connect() as c:
        c.execute(text(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on'))
        c.commit()
    store.engine.dispose()  # new sessions take the setting: from here on, any write fails
    for at in range(store.events.head() + 1):
        view = store.as_of(at)
        view.all(), view.page_items(limit=1), len(view), a in view, view.get(a), view.get_many([a])
        history(view, a), revision(view, "sha256:" + "0" * 64), proposal_history(view, a), pending(view)
        stored_policy(view).can_read("bob", "team-a"), stored_policy(view, live=True).can_read("bob", "team-a")
        view.close()
    with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
        assert c.execute(text("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'asof%'")).scalar() == 0
        c.execute(text("SET default_transaction_read_only = off"))
        c.execute(text(f'ALTER DATABASE "{name}" RESET default_transaction_read_only'))


def test_the_access_policy_and_proposals_as_of_a_position(store: Substrate) -> None:
    from service.teams.access import grant_access, revoke_access, stored_policy
    from service.teams.governance import pending, proposal_history, propose

    a = store.add("text", "x", scope="team-a")
    before = store.position
    granted = grant_access(store, "bob", "team-a", "read", by="team-a")
    proposed = propose(store, [a], to="team-b", by="team-a") and store.position
    revoke_access(store, "bob", "team-a", by="team-a")
    assert not stored_policy(store).can_read("bob", "team-a")
    assert stored_policy(store.as_of(granted)).can_read("bob", "team-a")
    assert not stored_policy(store.as_of(before)).can_read("bob", "team-a")
    assert stored_policy(store.as_of(granted), live=True).readable("bob", ["team-a"]) == {"team-a"}
    assert [i.id for i in pending(store.as_of(proposed))] == [a] and pending(store.as_of(before)) == []
    assert [e["status"] for e in proposal_history(store.as_of(proposed), a)] == ["pending"]
