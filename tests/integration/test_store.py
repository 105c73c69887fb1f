"""The Substrate item API on a real PostgreSQL: contracts of put/get/all/update/remove."""

from __future__ import annotations

import gc

import pytest

from service import Substrate, SubstrateItem


def test_put_get_round_trip_and_len(store: Substrate) -> None:
    item = SubstrateItem(kind="record", text="t", payload={"a": {"b": [1, 2.5, None, True]}}, tags=["x"])
    assert store.put(item) == item.id
    assert store.get(item.id) == item
    assert len(store) == 1
    assert store.get("missing") is None


def test_add_builds_and_puts(store: Substrate) -> None:
    i = store.add("text", "hello", scope="team-a", tags=["t"], links=["l"], derived_from=["d"])
    got = store.get(i)
    assert got is not None and (got.text, got.scope, got.tags, got.links, got.derived_from) == (
        "hello",
        "team-a",
        ["t"],
        ["l"],
        ["d"],
    )


def test_put_copies_the_callers_object(store: Substrate) -> None:
    item = SubstrateItem(kind="record", payload={"n": [1]})
    store.put(item)
    item.payload["n"].append(2)
    item.text = "changed"
    got = store.get(item.id)
    assert got is not None and got.payload == {"n": [1]} and got.text == ""


def test_get_and_all_return_copies(store: Substrate) -> None:
    i = store.add("record", payload={"n": [1]})
    store.get(i).payload["n"].append(99)  # type: ignore[union-attr]
    store.all()[0].tags.append("mutated")
    got = store.get(i)
    assert got is not None and got.payload == {"n": [1]} and got.tags == []


def test_put_replaces_in_place_keeping_insertion_order(store: Substrate) -> None:
    a = store.add("text", "a")
    b = store.add("text", "b")
    store.put(SubstrateItem(kind="text", text="a2", id=a))
    assert [i.text for i in store.all()] == ["a2", "b"]
    assert [i.id for i in store.all()] == [a, b]


def test_all_filters_by_kind_and_scope(store: Substrate) -> None:
    store.add("text", "1", scope="s1")
    store.add("record", "2", scope="s1")
    store.add("text", "3", scope="s2")
    assert [i.text for i in store.all(kind="text")] == ["1", "3"]
    assert [i.text for i in store.all(scope="s1")] == ["1", "2"]
    assert [i.text for i in store.all(kind="text", scope="s2")] == ["3"]
    assert store.all(kind="image") == []


def test_update_changes_fields_revalidates_and_returns_stored_copy(store: Substrate) -> None:
    i = store.add("text", "old", tags=["a"])
    out = store.update(i, text="new", tags=["b"])
    assert (out.text, out.tags) == ("new", ["b"])
    out.tags.append("z")
    assert store.get(i).tags == ["b"]  # type: ignore[union-attr]
    with pytest.raises(ValueError):
        store.update(i, kind="nonsense")
    assert store.get(i).kind == "text"  # type: ignore[union-attr]


def test_update_errors(store: Substrate) -> None:
    with pytest.raises(KeyError):
        store.update("nope", text="x")
    with pytest.raises(KeyError):  # an absent item is checked first, before the fields
        store.update("nope", id="other")
    i = store.add("text", "x")
    with pytest.raises(ValueError, match="id"):
        store.update(i, id="other")
    with pytest.raises((TypeError, ValueError)):
        store.update(i, colour="red")


def test_remove_reports_whether_anything_was_deleted(store: Substrate) -> None:
    i = store.add("text", "x")
    assert store.remove(i) is True
    assert store.remove(i) is False
    assert store.get(i) is None and len(store) == 0


def test_put_rejects_non_items_and_unstorable_values(store: Substrate) -> None:
    with pytest.raises(TypeError):
        store.put({"kind": "text"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="payload"):
        store.put(SubstrateItem(kind="record", payload={"x": float("inf")}))
    with pytest.raises(ValueError, match="NUL"):
        store.put(SubstrateItem(kind="text", text="a\x00b"))
    assert len(store) == 0 and store.events.head() == 0


def test_bad_secret_policy_is_rejected(make_store) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="secret_policy"):
        make_store(secret_policy="ignore")


def test_two_default_stores_are_isolated(make_store) -> None:  # type: ignore[no-untyped-def]
    a, b = make_store(), make_store()
    a.add("text", "only in a")
    assert len(a) == 1 and len(b) == 0


def test_put_many_is_one_batch_and_readable(store: Substrate) -> None:
    ids = store.put_many(SubstrateItem(kind="text", text=f"doc {n}") for n in range(200))
    assert len(ids) == 200 and len(store) == 200
    assert [i.id for i in store.all()] == ids
    assert store.events.head() == 200
    assert gc.isenabled()  # paused for the bulk work only


def test_a_failing_put_many_ends_the_collector_pause(store: Substrate) -> None:
    def items():  # type: ignore[no-untyped-def]
        yield SubstrateItem(kind="text", text="fine")
        raise OSError("the source broke")

    with pytest.raises(OSError):
        store.put_many(items())
    assert gc.isenabled()


def test_integers_beyond_64_bits_come_back_exact_and_the_log_still_verifies(store: Substrate) -> None:
    from service.store.audit import verify_store

    payload = {"big": 2**70, "neg": -(2**65), "u64": 2**64 - 1, "digits": "1234567890123456789012"}
    i = store.put(SubstrateItem(kind="record", payload=payload))
    assert store.get(i).payload == payload and type(store.get(i).payload["big"]) is int  # type: ignore[union-attr]
    assert verify_store(store).ok  # the replayed item digests equal the ones written
