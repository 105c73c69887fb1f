"""The pipelined replay (projections.pipeline): same read models as the live ones, in any batch size; failures
roll everything back and leave no thread behind."""

from __future__ import annotations

import gc
import threading
import time
from typing import Any

import pytest
from sqlalchemy import text

import projections.runner as runner
from projections import registry
from projections.runner import rebuild, table_digests
from service import Substrate, SubstrateItem
from service.beliefs.commands import Claim, assimilate
from service.domain.events import ItemPut, NewEvent
from service.teams.access import PUBLIC
from service.teams.spaces import merge_versions, publish


def _mixed_log(store: Substrate) -> None:
    """Batches the writer can run (puts, updates, removes) between ones a projector must apply itself
    (beliefs, publishes, merges)."""
    ids = [store.add("text", f"doc {n}", scope="team-a") for n in range(12)]
    store.put_many([SubstrateItem(kind="text", text=f"bulk {n}", id=f"bulk-{n}") for n in range(9)])
    store.update(ids[0], text="doc 0 edited")
    store.remove(ids[1])
    store.add("text", "evidence", id="src-1")
    assimilate(store, Claim("The sky is blue."), [{"source_id": "src-1", "tier": "real_measurement"}])
    publish(store, [ids[2], ids[3]], to=PUBLIC, by="team-a")
    for n in range(5):
        store.update(ids[4], tags=[f"t{n}"])
    merge_versions(store, ids[5], ids[6], by="team-a", confirm=True)
    store.put(SubstrateItem(kind="text", text="re-put", id=ids[1]))


def _live(store: Substrate) -> dict[str, str]:
    with store.engine.connect() as c:
        return table_digests(c)[1]


def _replay_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("substrate-replay")]


@pytest.mark.parametrize("batch", [1, 2, 3, 7, 2000])
def test_pipelined_rebuild_equals_the_live_read_models_in_any_batch_size(store: Substrate, batch: int) -> None:
    _mixed_log(store)
    live = _live(store)
    report = rebuild(store.engine, batch=batch)
    assert report.digests == live
    assert report.events == store.events.head()
    assert not _replay_threads()


def test_a_replay_up_to_a_position_stops_there(store: Substrate) -> None:
    _mixed_log(store)
    until = store.events.head() // 2
    assert rebuild(store.engine, until=until).events == until
    with store.engine.connect() as c:
        assert c.execute(text("SELECT max(seq) FROM checkpoints")).scalar() == until


def _twenty_docs(store: Substrate) -> dict[str, str]:
    """Twenty puts; the live digests they leave."""
    for n in range(20):
        store.add("text", f"doc {n}")
    return _live(store)


def test_a_failing_statement_rolls_the_rebuild_back_and_stops_every_thread(
    store: Substrate, monkeypatch: pytest.MonkeyPatch
) -> None:
    live = _twenty_docs(store)
    real = registry.plan_apply
    calls = {"n": 0}

    def failing(events, **kw):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        planned = real(events, **kw)
        if calls["n"] == 3 and planned is not None:
            return [*planned, ("SELECT 1 / 0", {})]  # the database refuses this batch's plan
        return planned

    monkeypatch.setattr(runner, "plan_apply", failing)
    with pytest.raises(Exception, match="division by zero"):
        rebuild(store.engine, batch=4)
    assert not _replay_threads()
    assert _live(store) == live  # the truncate and the first batches were rolled back with it
    monkeypatch.setattr(runner, "plan_apply", real)
    assert rebuild(store.engine, batch=4).digests == live


def test_a_failing_read_rolls_the_rebuild_back_and_stops_every_thread(
    store: Substrate, monkeypatch: pytest.MonkeyPatch
) -> None:
    live = _twenty_docs(store)
    real = runner._decode

    def failing(row):  # type: ignore[no-untyped-def]
        if row[0] == 13:
            raise ValueError("undecodable event 13")
        return real(row)

    monkeypatch.setattr(runner, "_decode", failing)
    with pytest.raises(ValueError, match="undecodable event 13"):
        rebuild(store.engine, batch=4)
    assert not _replay_threads()
    assert _live(store) == live
    assert gc.isenabled()  # the replay's pause of the collector ended with it


_INDEXES = (
    "SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid), "
    "(SELECT pg_get_constraintdef(k.oid) FROM pg_constraint k WHERE k.conindid = indexrelid) FROM pg_index "
    "WHERE indrelid IN ('items'::regclass, 'revisions'::regclass, 'search_docs'::regclass, 'search_lists'::regclass, "
    "'search_deaths'::regclass, 'search_domains'::regclass) ORDER BY 1"
)


def test_a_rebuild_leaves_every_index_as_the_migrations_made_it(store: Substrate) -> None:
    # A rebuild drops the read models' secondary indexes (and the search tables' keys) while it fills them.
    _mixed_log(store)
    with store.engine.connect() as c:
        before = c.exec_driver_sql(_INDEXES).all()
    assert len(before) >= 12  # six keys, six secondary indexes
    live = _live(store)
    assert rebuild(store.engine, batch=5).digests == live
    with store.engine.connect() as c:
        assert c.exec_driver_sql(_INDEXES).all() == before
        # ...and built (valid and ready for the planner once no older snapshot is open)
        flags = c.exec_driver_sql(
            "SELECT bool_and(indisvalid AND indisready AND indislive) FROM pg_index "
            "WHERE indrelid IN ('items'::regclass, 'revisions'::regclass, 'search_lists'::regclass)"
        ).scalar()
    assert flags is True
    assert gc.isenabled()


def test_a_failed_rebuild_keeps_every_index(store: Substrate, monkeypatch: pytest.MonkeyPatch) -> None:
    _twenty_docs(store)
    with store.engine.connect() as c:
        before = c.exec_driver_sql(_INDEXES).all()
    monkeypatch.setattr(runner, "_decode", lambda row: (_ for _ in ()).throw(ValueError("no")))
    with pytest.raises(ValueError):
        rebuild(store.engine)
    with store.engine.connect() as c:
        assert c.exec_driver_sql(_INDEXES).all() == before


def _item_on_a_foreign_stream(store: Substrate, item_id: str) -> None:
    """An event carrying item ``item_id`` on another stream: the service never writes one, so a stream's first
    event is then no proof that its item is new."""
    data = store.event_item(SubstrateItem(kind="text", text="written elsewhere", id=item_id))
    # Only straight to the event store: the write door refuses an item event off its item's stream.
    store.events.append(
        [NewEvent(stream="elsewhere", event=ItemPut(item=data), scope=data["scope"], normalized=True)], "local"
    )


def test_a_replay_that_finds_a_row_it_believed_new_starts_again_with_upserts(
    store: Substrate, monkeypatch: pytest.MonkeyPatch
) -> None:
    _item_on_a_foreign_stream(store, "x")
    store.put(SubstrateItem(kind="text", text="its own stream's first event", id="x"))
    store.add("text", "another")
    live = _live(store)
    runs: list[bool] = []
    real = runner._replay

    def counted(*args, **kw):  # type: ignore[no-untyped-def]
        runs.append(kw.get("optimistic", False))
        return real(*args, **kw)

    monkeypatch.setattr(runner, "_replay", counted)
    assert rebuild(store.engine, batch=1).digests == live
    assert runs == [True, False]  # the optimistic pass met the row, the second one upserted
    assert store.get("x").text == "its own stream's first event"  # type: ignore[union-attr]


def test_a_bulk_append_that_finds_a_row_it_believed_new_upserts_it(store: Substrate) -> None:
    _item_on_a_foreign_stream(store, "y")
    ids = store.put_many(SubstrateItem(kind="text", text=f"bulk {n}", id=f"b{n}") for n in range(5))
    ids += store.put_many([SubstrateItem(kind="text", text="bulk, own stream", id="y")])
    assert store.get("y").text == "bulk, own stream"  # type: ignore[union-attr]
    assert len(store) == 6
    assert _live(store) == rebuild(store.engine).digests


def test_a_rebuild_empties_small_and_big_tables_alike(store: Substrate) -> None:
    # Small tables are emptied with DELETE, big ones (and those it fills in bulk) with TRUNCATE: both come back
    # as the log says (here: no grants at all, whatever was in the table).
    store.add("text", "one")
    with store.engine.begin() as c:
        c.exec_driver_sql(
            "INSERT INTO grants (principal, scope, can_read, can_write, seq) "
            "SELECT 'p' || n, 's', true, false, 1 FROM generate_series(1, 1500) n"
        )
        c.exec_driver_sql("INSERT INTO approvers (seq, scope, who, by, bootstrap) VALUES (999, 's', 'w', 'b', true)")
    report = rebuild(store.engine)
    assert report.counts["grants"] == 0 and report.counts["approvers"] == 0 and report.counts["items"] == 1
    assert report.digests == _live(store)


def test_a_rebuild_never_holds_some_read_models_while_waiting_for_a_reader_of_another(store: Substrate) -> None:
    # A search reads several search tables in one statement; a rebuild that truncated some and then waited for
    # the search's lock on another would deadlock with it. It takes them all at once or none, so while a reader
    # holds search_domains the items table stays readable, and the rebuild finishes once the reader is done.
    _twenty_docs(store)
    live = _live(store)
    reader = store.engine.connect()
    reader.exec_driver_sql("SELECT count(*) FROM search_domains").scalar()  # AccessShare, held until rollback
    reports: list[Any] = []
    t = threading.Thread(target=lambda: reports.append(rebuild(store.engine)))
    t.start()
    time.sleep(1.0)  # the rebuild is waiting for the reader by now
    try:
        with store.engine.connect() as other:
            other.exec_driver_sql("SET lock_timeout = '2s'")
            for _ in range(5):  # meanwhile, again and again: never locked by the waiting rebuild
                assert other.exec_driver_sql("SELECT count(*) FROM items").scalar() == 20
                other.rollback()
                other.exec_driver_sql("SET lock_timeout = '2s'")
        assert t.is_alive()  # still waiting for the reader
    finally:
        reader.rollback()
        reader.close()
        t.join(60)
    assert reports and reports[0].digests == live
