"""as_of(): read-only views of the past, replayed from the log."""

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
    alice.add("text", "hello")
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
