"""item_states: every item state with the log interval it was live in, kept inline and rebuilt identically."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import text

from projections.canonical import item_digest
from projections.runner import rebuild
from service import Substrate, SubstrateItem
from service.beliefs.commands import Claim, assimilate
from service.domain.events import ItemPut, NewEvent
from service.teams.access import PUBLIC
from service.teams.spaces import merge_versions, publish

_ROWS = "SELECT item_id, from_seq, to_seq, digest, scope, kind, pos FROM item_states ORDER BY item_id, from_seq"


def _expected(store: Substrate) -> list[tuple[Any, ...]]:
    """The intervals folded from the log event by event (the definition the read model must meet)."""
    rows: dict[tuple[str, int], list[Any]] = {}
    live: dict[str, tuple[str, int]] = {}
    for e in store.events.read():
        item = e.data.get("item")
        if isinstance(item, dict):
            i = item["id"]
            before = live.get(i)
            pos = e.seq
            if before is not None:
                rows[before][2] = e.seq
                pos = rows[before][6]
            rows[(i, e.seq)] = [i, e.seq, None, item_digest(item), item["scope"], item["kind"], pos]
            live[i] = (i, e.seq)
        gone = e.data["id"] if e.type == "ItemRemoved" else e.data.get("removed") if e.type == "ItemsMerged" else None
        if gone and gone in live:
            rows[live.pop(gone)][2] = e.seq
    return [tuple(r) for _, r in sorted(rows.items())]


def _stored(store: Substrate) -> list[tuple[Any, ...]]:
    with store.engine.connect() as c:
        return [tuple(r) for r in c.execute(text(_ROWS))]


def _history(store: Substrate) -> None:
    ids = [store.add("text", f"doc {n}", scope="team-a") for n in range(6)]
    store.put_many([SubstrateItem(kind="text", text=f"bulk {n}", id=f"bulk-{n}") for n in range(70)])
    store.put_many([SubstrateItem(kind="record", text=f"bulk {n} again", id=f"bulk-{n}") for n in range(0, 70, 2)])
    store.update(ids[0], text="doc 0 edited")
    store.remove(ids[1])
    store.put(SubstrateItem(kind="text", text="back again", id=ids[1]))  # a new life: a new pos
    store.update(ids[1], text="back, edited")  # keeps the new life's pos
    store.remove("bulk-3")
    store.add("text", "evidence", id="src-1")
    assimilate(store, Claim("The sky is blue."), [{"source_id": "src-1", "tier": "real_measurement"}])
    publish(store, [ids[2]], to=PUBLIC, by="team-a")
    merge_versions(store, ids[3], ids[4], by="team-a", confirm=True)


def test_every_state_carries_the_interval_it_was_live_in(store: Substrate) -> None:
    _history(store)
    assert _stored(store) == _expected(store)


def test_the_live_states_are_the_items_table(store: Substrate) -> None:
    _history(store)
    with store.engine.connect() as c:
        live = c.execute(
            text("SELECT item_id, digest, scope, kind, pos FROM item_states WHERE to_seq IS NULL ORDER BY 1")
        ).all()
        items = c.execute(text("SELECT id, digest, scope, kind, pos FROM items ORDER BY 1")).all()
    assert live == items


@pytest.mark.parametrize("batch", [1, 5, 2000])
def test_a_rebuild_reproduces_every_interval(store: Substrate, batch: int) -> None:
    _history(store)
    before = _stored(store)
    rebuild(store.engine, batch=batch)
    assert _stored(store) == before


def test_an_item_first_written_on_another_stream_has_its_state_closed(store: Substrate) -> None:
    data = store.event_item(SubstrateItem(kind="text", text="written elsewhere", id="x"))
    # Only straight to the event store: the write door refuses an item event off its item's stream.
    store.events.append(
        [NewEvent(stream="elsewhere", event=ItemPut(item=data), scope=data["scope"], normalized=True)], "local"
    )
    store.put(SubstrateItem(kind="text", text="its own stream's first event", id="x"))
    store.put_many([SubstrateItem(kind="text", text="bulk, over it", id="x")] * 70)
    assert _stored(store) == _expected(store)
    rebuild(store.engine)
    assert _stored(store) == _expected(store)


def test_the_migration_fills_the_table_of_a_store_written_before_it(store: Substrate) -> None:
    from alembic import command
    from alembic.config import Config

    from service.store.audit import verify_store
    from service.store.database import upgrade

    _history(store)
    before = _stored(store)
    cfg = Config()
    cfg.set_main_option("script_location", "migrations")
    with store.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0007")
        assert conn.execute(text("SELECT to_regclass('item_states')")).scalar() is None
    upgrade(store.engine)
    assert _stored(store) == before
    assert verify_store(store).ok  # the read models equal a replay, checkpoints included
    with store.engine.connect() as c:
        names = dict(c.execute(text("SELECT name, seq FROM checkpoints")).all())
    assert names["item_states"] == store.events.head()
